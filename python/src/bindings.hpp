// SPDX-License-Identifier: MIT
// bindings.hpp - what nvme_csd._core's files share: buffers, a Python progress callback,
// the device as Python holds it (PyDevice, and a call's Use of it), SLM buffers and views,
// and each area's bind function (bindings.cc calls them in the order the module lists them).
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "csd/device.hpp"
#include "csd/drive_set.hpp"
#include "csd/store.hpp"
#ifdef CSD_HAVE_GPU
#include "gpu.hpp"
#endif

namespace py = pybind11;

namespace pycsd {

using namespace csd;

// A contiguous, readable view of any buffer-protocol object.
struct InBuf {
    py::buffer_info info;
    explicit InBuf(const py::buffer &b) : info(b.request())
    {
        if (!PyBuffer_IsContiguous(info.view(), 'C')) {
            throw py::value_error("the buffer is not C-contiguous");
        }
    }
    const void *ptr() const { return info.ptr; }
    uint64_t size() const { return static_cast<uint64_t>(info.size) * info.itemsize; }
};

// A contiguous, writable view.
struct OutBuf {
    py::buffer_info info;
    explicit OutBuf(const py::buffer &b) : info(b.request(true))
    {
        if (!PyBuffer_IsContiguous(info.view(), 'C')) {
            throw py::value_error("the output buffer is not C-contiguous");
        }
    }
    void *ptr() const { return info.ptr; }
    uint64_t size() const { return static_cast<uint64_t>(info.size) * info.itemsize; }
};

// A Python progress(done, total) for libcsd's long store operations, or none: libcsd calls
// it on the calling thread with the GIL released, so it takes the GIL. An exception it
// raises cancels the operation: it is kept, a csd::Error (ECANCELED) stops libcsd (a put
// then releases its reservation and stores nothing), and the caller raises the kept one
// (rethrow) once libcsd has unwound.
struct PyProgress {
    py::object fn;
    std::unique_ptr<py::error_already_set> err;

    explicit PyProgress(py::object f) : fn(std::move(f)) {}
    Progress callback()
    {
        if (fn.is_none()) return {};
        return [this](uint64_t done, uint64_t total) { call("progress", [&] { fn(done, total); }); };
    }
    // Runs f (Python code) with the GIL, from a libcsd call that released it; an exception it
    // raises is kept and stops libcsd as the progress callback's does. `what` names it.
    template <class F>
    auto call(const char *what, F &&f) -> decltype(f())
    {
        {
            py::gil_scoped_acquire g;
            if (!err) {
                try {
                    return f();
                } catch (py::error_already_set &e) {
                    err = std::make_unique<py::error_already_set>(std::move(e));
                }
            }
        }
        throw Error(std::string("cancelled by an exception from the ") + what + " callback", ECANCELED);
    }
    // Runs Python's signal handlers (a read or write of a descriptor was interrupted, EINTR):
    // an exception one raises (KeyboardInterrupt) stops libcsd as the callback's does.
    void check_signals()
    {
        call("signal handler", [] {
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        });
    }
    // Runs op (a libcsd call taking callback(), with the GIL released); raises what the
    // callback raised if it did (that stopped op), else op's own error.
    template <class F>
    auto run(F &&op)
    {
        try {
            py::gil_scoped_release r;
            return op();
        } catch (...) {
            rethrow();
            throw;
        }
    }
    // Raises what the callback raised, if it did (call with the GIL held).
    void rethrow()
    {
        if (err) {
            py::error_already_set e = std::move(*err);
            err.reset();
            throw e;
        }
    }
};

// The device and what lives as long as it. Every call that uses it holds it (a Use, taken
// before the GIL is released): close() lets no new call start (DeviceClosed), asks the drive
// to stop the Executes in flight (Command Abort Requested; a chase stops between hops),
// waits for the calls under way to end, then frees it. What a call still holds (the Device,
// the store, the GPU landing, each a shared_ptr) lives until that call ends, so a call that
// closes its own device (from a progress callback) frees it when it returns; a zero-copy SLM
// view keeps the Device until the view goes.
struct PyDevice {
    std::shared_ptr<Device> dev;
    std::shared_ptr<ObjectStore> store;
#ifdef CSD_HAVE_GPU
    std::shared_ptr<gpu::Landing> landing;
#endif
    std::mutex mu;  // closed, in_flight, dev, store, landing
    std::condition_variable drained;
    bool closed = false;
    int in_flight = 0;  // Uses alive, on every thread

    PyDevice();
    ~PyDevice();
    void close();
};

// The devices whose Uses this thread holds, once per Use (bind_device.cc).
extern thread_local std::vector<const PyDevice *> t_held;

// A call's hold on an open device (DeviceClosed if it is closed): the device stays open,
// and alive, until the Use ends.
class Use {
public:
    explicit Use(PyDevice &p) : p_(p)
    {
        {
            std::lock_guard<std::mutex> g(p.mu);
            if (p.closed || !p.dev) throw Error("the device is closed", EBADF);
            p.in_flight++;
            dev_ = p.dev;
        }
        t_held.push_back(&p);
    }
    ~Use()
    {
        t_held.erase(std::find(t_held.begin(), t_held.end(), &p_));
        std::lock_guard<std::mutex> g(p_.mu);
        if (--p_.in_flight == 0 && p_.closed) p_.drained.notify_all();
    }
    Use(const Use &) = delete;
    Use &operator=(const Use &) = delete;
    Device &d() const { return *dev_; }
    const std::shared_ptr<Device> &keep() const { return dev_; }
    // The device's object store, made on first use (the call keeps it while it runs).
    std::shared_ptr<ObjectStore> store() const
    {
        std::lock_guard<std::mutex> g(p_.mu);
        if (!p_.store) p_.store = std::make_shared<ObjectStore>(*dev_);
        return p_.store;
    }
#ifdef CSD_HAVE_GPU
    // The GPU landing pipeline, made on first use.
    std::shared_ptr<gpu::Landing> land() const
    {
        std::lock_guard<std::mutex> g(p_.mu);
        if (!p_.landing) p_.landing = std::make_shared<gpu::Landing>(*dev_);
        return p_.landing;
    }
#endif

private:
    PyDevice &p_;
    std::shared_ptr<Device> dev_;
};

struct PySlm {
    std::shared_ptr<PyDevice> owner;
    SlmBuffer buf;
    // After the device was closed its allocator is gone: nothing left to free.
    ~PySlm() { free(); }
    void free()
    {
        if (!buf) return;
        if (!owner) {
            buf.reset();
            return;
        }
        try {
            const Use u(*owner);  // the allocator lives while this runs
            buf.reset();
        } catch (const Error &) {  // closed
            buf.detach();
        }
    }
};

// A zero-copy view of SLM (the in-process device): it keeps the Device, whose memory it
// shows, until it goes, even past close().
struct PySlmView {
    std::shared_ptr<Device> keep;
    uint8_t *ptr;
    size_t len;
};

// f() with the GIL released: a store call may wait for the store's lock, which a put whose
// progress callback waits for the GIL holds.
template <class F>
auto released(F f) -> decltype(f())
{
    py::gil_scoped_release r;
    return f();
}

using PyRange = std::pair<uint64_t, uint64_t>;  // (offset, length) in SLM

inline Range rng(const PyRange &r) { return {r.first, r.second}; }

// A FilterSpec from the Python side's fields (bind_store.cc).
FilterSpec filter_spec(uint32_t record_size, uint32_t field_offset, uint16_t field_type, uint16_t op, double lo,
                       double hi, int64_t lo_int, int64_t hi_int, bool indices);
// An object's catalog entry, and a reservation, as dicts (bind_store.cc).
py::dict object_info(const ObjectInfo &o);
py::dict reservation_info(const Reservation &x);
// A drive's statistics log page (C1h) as a dict of counters by name (bind_device.cc).
py::dict statistics_dict(Device &dev);

using PyDeviceClass = py::class_<PyDevice, std::shared_ptr<PyDevice>>;
// SlmView and SlmBuffer, before Device, whose methods return them (bind_device.cc).
void bind_slm(py::module_ &m);
// Device and its calls on the drive (bind_device.cc).
PyDeviceClass bind_device(py::module_ &m);
// Device's object-store calls (bind_store.cc).
void bind_device_store(PyDeviceClass &cls);
// DriveSet: several drives as one (bind_drive_set.cc).
void bind_drive_set(py::module_ &m);
// The GPU landing calls, refusing without the GPU part (bind_gpu.cc).
void bind_gpu(py::module_ &m);
// GpuLayerLoader (bind_gpu.cc).
void bind_layer_loader(py::module_ &m);
// _core.programs: the device-defined programs' typed calls (bind_programs.cc).
void bind_programs(py::module_ &m);

}  // namespace pycsd
