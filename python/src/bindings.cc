// SPDX-License-Identifier: MIT
// bindings.cc - nvme_csd._core: libcsd for Python (pybind11). Thin: the Pythonic layer
// (numpy/torch/DLPack, program wrappers, the store mapping) is nvme_csd/*.py. Every call
// that talks to the device releases the GIL, so threads overlap device work.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <pthread.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>

#include "csd/btree.hpp"
#include "csd/device.hpp"
#include "csd/drive_set.hpp"
#include "csd/npy.hpp"
#include "csd/program.hpp"
#include "csd/programs.hpp"
#include "csd/store.hpp"
#include "csd/store_io.hpp"
#include "csd_spec.h"
#include "nvme_cs.h"
#ifdef CSD_HAVE_GPU
#include "gpu.hpp"
#include "layer_loader.hpp"
#endif

namespace py = pybind11;
using namespace csd;

namespace {

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

// The device and what lives as long as it: SLM buffers keep it alive.
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

// StreamOptions of a Python call: its SLM budget (0: all that is free) and progress.
StreamOptions stream_options(uint64_t slm_budget, PyProgress &pr)
{
    StreamOptions o;
    o.slm_budget = slm_budget;
    o.progress = pr.callback();
    return o;
}

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

// The PyDevices of this process, for fork(): a child has only the forking thread, so its
// devices count only that thread's Uses (the other threads' calls are not in the child).
std::mutex g_devices_mu;
std::vector<PyDevice *> g_devices;
// The devices whose Uses this thread holds, once per Use.
thread_local std::vector<const PyDevice *> t_held;

int held_here(const PyDevice *p) { return static_cast<int>(std::count(t_held.begin(), t_held.end(), p)); }

void fork_prepare()
{
    g_devices_mu.lock();
    for (PyDevice *p : g_devices) p->mu.lock();
}

void fork_parent()
{
    for (PyDevice *p : g_devices) p->mu.unlock();
    g_devices_mu.unlock();
}

void fork_child()
{
    for (PyDevice *p : g_devices) {
        p->in_flight = held_here(p);
        new (&p->drained) std::condition_variable();  // its waiters were the parent's threads: not ours
        p->mu.unlock();
    }
    g_devices_mu.unlock();
}

PyDevice::PyDevice()
{
    static std::once_flag once;
    std::call_once(once, [] { pthread_atfork(fork_prepare, fork_parent, fork_child); });
    std::lock_guard<std::mutex> g(g_devices_mu);
    g_devices.push_back(this);
}

PyDevice::~PyDevice()
{
    std::lock_guard<std::mutex> g(g_devices_mu);
    g_devices.erase(std::find(g_devices.begin(), g_devices.end(), this));
}

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

// Closes the device (call with the GIL held; it is released while waiting): see PyDevice.
void PyDevice::close()
{
    py::gil_scoped_release r;
    std::shared_ptr<Device> d;
    std::shared_ptr<ObjectStore> st;
#ifdef CSD_HAVE_GPU
    std::shared_ptr<gpu::Landing> land;
#endif
    {
        std::unique_lock<std::mutex> g(mu);
        closed = true;
        const int mine = held_here(this);  // this thread's own calls cannot end while it waits
        while (in_flight > mine) {
            Device *dv = dev.get();
            g.unlock();
            if (dv) dv->abort_executes();  // dev lives: only close() clears it, after the wait
            g.lock();
            // again until they end: an Execute sent after the abort is asked to stop too
            drained.wait_for(g, std::chrono::milliseconds(20), [&] { return in_flight <= mine; });
        }
        d = std::move(dev);
        st = std::move(store);
#ifdef CSD_HAVE_GPU
        land = std::move(landing);
#endif
    }
    // freed here unless a call still holds them: the landing, the store, then the device
#ifdef CSD_HAVE_GPU
    land.reset();
#endif
    st.reset();
    d.reset();
}

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

// A FilterSpec from the Python side's fields.
FilterSpec filter_spec(uint32_t record_size, uint32_t field_offset, uint16_t field_type, uint16_t op, double lo,
                       double hi, int64_t lo_int, int64_t hi_int, bool indices)
{
    FilterSpec s;
    s.record_size = record_size;
    s.field_offset = field_offset;
    s.field_type = static_cast<FieldType>(field_type);
    s.op = static_cast<CmpOp>(op);
    s.lo = lo;
    s.hi = hi;
    s.lo_int = lo_int;
    s.hi_int = hi_int;
    s.indices = indices;
    return s;
}

py::dict object_info(const ObjectInfo &o)
{
    py::dict d;
    d["name"] = o.name;
    d["dtype"] = o.dtype;
    d["shape"] = o.shape;
    d["bytes"] = o.bytes;
    d["crc32c"] = o.crc32c;
    d["generation"] = o.generation;
    return d;
}

py::dict reservation_info(const Reservation &x)
{
    py::dict d;
    d["id"] = x.id;
    d["block"] = x.block;
    d["blocks"] = x.blocks;
    d["time"] = x.time;
    d["owner"] = x.owner;
    return d;
}

// A command-set name table (spec/csd_spec.h) as {name: value}.
py::dict name_table(const csd_name *t)
{
    py::dict d;
    for (; t->name; t++) d[t->name] = t->value;
    return d;
}

// The command set's ids, parameter names and status codes, from the one wire-format header.
py::dict wire_format()
{
    py::dict w, programs, statuses, nvme_cs_statuses;
    for (uint16_t id = 1; id <= CSD_NR_DEVICE_PROGRAMS; id++) programs[csd_program_name(id)] = id;
    for (uint16_t code : csd_named_statuses) statuses[csd_status_name(code)] = code;
    for (uint16_t code = NVME_CS_INCOMPATIBLE_NS_OR_FORMAT; code <= NVME_CS_PROGRAM_TOO_BIG; code++) {
        if (const char *name = nvme_cs_status_name(code)) nvme_cs_statuses[name] = code;  // spec/nvme_cs.h
    }
    w["programs"] = programs;
    w["statuses"] = statuses;
    w["nvme_cs_statuses"] = nvme_cs_statuses;
    w["elementwise_ops"] = name_table(csd_elementwise_op_names);
    w["reduce_ops"] = name_table(csd_reduce_op_names);
    w["dtypes"] = name_table(csd_dtype_names);
    w["field_types"] = name_table(csd_field_type_names);
    w["filter_ops"] = name_table(csd_filter_op_names);
    w["convert_ops"] = name_table(csd_convert_op_names);
    w["checksum_algos"] = name_table(csd_checksum_algo_names);
    w["decompress_algos"] = name_table(csd_decompress_algo_names);
    w["program_modes"] = name_table(csd_bpf_mode_names);
    w["program_downloaded"] = static_cast<uint32_t>(CSD_PROGRAM_DOWNLOADED);
    w["max_program_params"] = static_cast<uint32_t>(CSD_BPF_MAX_PARAMS);
    w["max_chase_hops"] = static_cast<uint32_t>(CSD_BPF_MAX_HOPS);
    w["media_max_stage"] = static_cast<uint64_t>(CSD_MEDIA_MAX_STAGE);
    w["first_unary_elementwise_op"] = static_cast<uint32_t>(CSD_EW_RELU);
    return w;
}

using PyRange = std::pair<uint64_t, uint64_t>;  // (offset, length) in SLM

Range rng(const PyRange &r) { return {r.first, r.second}; }

// _core.programs: libcsd's typed program calls (csd/programs.hpp), which lay out each
// program's parameters; Python passes the wire codes it reads from WIRE and SLM ranges.
void bind_programs(py::module_ &m)
{
    py::module_ p = m.def_submodule("programs", "libcsd's typed calls of the device-defined programs");
    p.def("copy", [](PyDevice &d, PyRange src, PyRange dst) {
        const Use u(d);
        py::gil_scoped_release g;
        return programs::copy(u.d(), rng(src), rng(dst));
    }, "copy: dst = src; returns the bytes copied");
    p.def("gemm", [](PyDevice &d, PyRange a, PyRange b, PyRange c, uint32_t m_, uint32_t n, uint32_t k, bool trans_a,
                     bool trans_b, float alpha, float beta) {
        const Use u(d);
        py::gil_scoped_release g;
        programs::gemm(u.d(), rng(a), rng(b), rng(c), m_, n, k, trans_a, trans_b, alpha, beta);
    }, "gemm: C = alpha op(A) op(B) + beta C, f32 row-major, m x n");
    p.def("elementwise", [](PyDevice &d, uint32_t op, PyRange x, PyRange y, PyRange out, uint32_t count) {
        const Use u(d);
        py::gil_scoped_release g;
        programs::elementwise(u.d(), static_cast<EwOp>(op), rng(x), rng(y), rng(out), count);
    }, "elementwise, binary: out = x op y over count f32");
    p.def("elementwise", [](PyDevice &d, uint32_t op, PyRange x, PyRange out, uint32_t count, float a, float b) {
        const Use u(d);
        py::gil_scoped_release g;
        programs::elementwise(u.d(), static_cast<EwOp>(op), rng(x), rng(out), count, a, b);
    }, "elementwise, unary: out = op(x) (axpb: a*x+b)");
    p.def("softmax", [](PyDevice &d, PyRange x, PyRange out, uint32_t rows, uint32_t cols) {
        const Use u(d);
        py::gil_scoped_release g;
        programs::softmax(u.d(), rng(x), rng(out), rows, cols);
    }, "softmax of each row");
    p.def("reduce", [](PyDevice &d, uint32_t op, uint32_t dtype, PyRange x, PyRange out, uint32_t rows, uint32_t cols) {
        const Use u(d);
        py::gil_scoped_release g;
        programs::reduce(u.d(), static_cast<ReduceOp>(op), static_cast<DType>(dtype), rng(x), rng(out), rows, cols);
    }, "reduce: one 8-byte result per row into out");
    p.def("filter", [](PyDevice &d, PyRange records, PyRange out, uint32_t record_size, uint32_t count,
                       uint32_t field_offset, uint16_t field_type, uint16_t op, bool indices, double lo, double hi,
                       int64_t lo_int, int64_t hi_int) {
        const Use u(d);
        FilterSpec s = filter_spec(record_size, field_offset, field_type, op, lo, hi, lo_int, hi_int, indices);
        s.count = count;
        py::gil_scoped_release g;
        const FilterResult r = programs::filter(u.d(), rng(records), rng(out), s);
        return std::make_pair(r.bytes, r.matches);
    }, "filter into a fixed output range: (bytes written, matches); Output Overflow if it is small");
    p.def("convert", [](PyDevice &d, uint32_t op, PyRange in, PyRange out, uint32_t count, float scale,
                        int32_t zero_point) {
        const Use u(d);
        py::gil_scoped_release g;
        return programs::convert(u.d(), static_cast<ConvertOp>(op), rng(in), rng(out), count, scale, zero_point);
    }, "convert count elements; returns the bytes written");
    p.def("checksum", [](PyDevice &d, uint32_t algo, PyRange data) {
        const Use u(d);
        py::gil_scoped_release g;
        return programs::checksum(u.d(), static_cast<ChecksumAlgo>(algo), rng(data));
    }, "checksum of a range (CRC-32C or XXH64)");
    p.def("conv2d", [](PyDevice &d, PyRange input, PyRange weight, std::optional<PyRange> bias, PyRange output,
                       std::array<uint32_t, 7> nchwkrs, std::array<uint32_t, 2> stride, std::array<uint32_t, 2> pad,
                       std::array<uint32_t, 2> dilation) {
        const Use u(d);
        const auto [n, c, h, w, k, r, s] = nchwkrs;
        const csd_conv2d_params prm{n, c, h, w, k, r, s, stride[0], stride[1], pad[0], pad[1], dilation[0],
                                    dilation[1], bias ? 1u : 0u};
        py::gil_scoped_release g;
        programs::conv2d(u.d(), rng(input), rng(weight), bias ? rng(*bias) : Range{}, rng(output), prm);
    }, "conv2d, NCHW f32: (n, c, h, w, k, r, s), (stride h, w), (padding h, w), (dilation h, w); bias None or a range");
    p.def("decompress", [](PyDevice &d, uint32_t codec, PyRange in, PyRange out) {
        const Use u(d);
        py::gil_scoped_release g;
        return programs::decompress(u.d(), static_cast<Codec>(codec), rng(in), rng(out));
    }, "decompress; returns the decompressed bytes");
    p.def("downloaded", [](PyDevice &d, uint16_t program, uint32_t mode, PyRange records, PyRange out, uint32_t count,
                           const std::vector<uint64_t> &params) {
        const Use u(d);
        py::gil_scoped_release g;
        Program prog = Program::attach(u.d(), program, 0);  // Program::run sends the mode's ranges
        prog.keep();  // the Python Program owns the slot
        const ExecResult x = prog.run(mode, rng(records), rng(out), count, params);
        return std::make_pair(x.dw0, x.dw1);
    }, "a downloaded program in a mode over count records (chase: records is the result range, count the "
       "hop limit, params[0] the start LBA): (dw0, dw1)");
    p.def("chase", [](PyDevice &d, uint16_t program, uint32_t record_size, uint64_t start_lba,
                      const std::vector<uint64_t> &params, uint32_t max_hops) {
        const Use u(d);
        py::gil_scoped_release g;
        Program prog = Program::attach(u.d(), program, record_size);
        prog.keep();  // the Python Program owns the slot
        const ChaseResult r = prog.run_chase(start_lba, params, max_hops);
        return std::make_pair(r.value, r.hops);
    }, "a downloaded program's chase from start_lba (params[1..] = params): (value, hops)");
    p.def("chase_value", [](PyDevice &d, uint16_t program, uint32_t record_size, uint64_t start_lba,
                            const std::vector<uint64_t> &params, uint32_t max_hops) {
        const Use u(d);
        py::gil_scoped_release g;
        Program prog = Program::attach(u.d(), program, record_size);
        prog.keep();  // the Python Program owns the slot
        return prog.chase_value(start_lba, params, max_hops);
    }, "the same chase as one command: its value from the completion (no hop count read back)");
    p.def("btree_write", [](PyDevice &d, const std::vector<uint64_t> &keys, const std::vector<uint64_t> &values,
                            uint64_t base_lba, uint32_t fanout) {
        const Use u(d);
        py::gil_scoped_release g;
        const BtreeLayout t = btree_write(u.d(), keys, values, base_lba, fanout);
        return std::make_tuple(t.root_lba, t.blocks, t.depth);
    }, "the chase example's B+-tree written from base_lba: (root_lba, blocks, depth)");
    p.def("gather", [](PyDevice &d, PyRange entries, uint32_t count, PyRange out) {
        const Use u(d);
        py::gil_scoped_release g;
        return programs::gather(u.d(), rng(entries), count, rng(out));
    }, "gather: count (lba, offset, length) entries of the namespace into out; returns the bytes written");
    p.def("embedding_bag", [](PyDevice &d, PyRange indices, PyRange offsets, PyRange weights, PyRange out,
                              uint64_t table_lba, uint64_t num_rows, uint32_t row_dim, uint32_t dtype, uint32_t mode,
                              bool index_i32, uint32_t num_bags, bool include_last_offset) {
        const Use u(d);
        EmbeddingBagSpec s;
        s.table_lba = table_lba;
        s.num_rows = num_rows;
        s.row_dim = row_dim;
        s.dtype = static_cast<EmbDType>(dtype);
        s.mode = static_cast<EmbMode>(mode);
        s.index_i32 = index_i32;
        s.num_bags = num_bags;
        s.include_last_offset = include_last_offset;
        py::gil_scoped_release g;
        programs::embedding_bag(u.d(), s, rng(indices), rng(offsets), rng(weights), rng(out));
    }, "embedding_bag of a table on the namespace into out (weights: length 0 for none)");
    p.def("write_blocks", [](PyDevice &d, uint64_t slba, const py::buffer &b) {
        const Use u(d);
        InBuf in(b);
        const uint32_t lba = u.d().ns().lba_size;
        if (in.size() % lba) throw py::value_error("a whole number of blocks is written");
        py::gil_scoped_release g;
        if (in.size()) u.d().write_lbas(slba, in.size() / lba, in.ptr());
    }, "writes whole blocks of the namespace from slba (NVMe Write): where media programs' tables live");
    p.def("read_blocks_into", [](PyDevice &d, uint64_t slba, const py::buffer &b) {
        const Use u(d);
        OutBuf out(b);
        const uint32_t lba = u.d().ns().lba_size;
        if (out.size() % lba) throw py::value_error("a whole number of blocks is read");
        py::gil_scoped_release g;
        if (out.size()) u.d().read_lbas(slba, out.size() / lba, out.ptr());
    }, "reads whole blocks of the namespace from slba into a buffer (NVMe Read)");
}

// A drive's statistics log page (C1h) as a dict of counters by name; on a drive without
// it (standard only) every counter None: unknown, not zero.
py::dict statistics_dict(Device &dev)
{
    Statistics s;
    {
        py::gil_scoped_release r;
        s = dev.stats();
    }
    py::dict d;
    d["available"] = s.available;
    if (!s.available) {
        for (int i = 0; i < CSD_STAT_COUNT; i++) d[csd_stat_names[i]] = py::none();
        d["per_program"] = py::none();
        return d;
    }
    for (int i = 0; i < CSD_STAT_COUNT; i++) d[csd_stat_names[i]] = s.counters[i];
    d["per_program"] = std::vector<uint64_t>(s.per_program.begin(), s.per_program.end());
    return d;
}

}  // namespace

// csd::gpu::LayerLoader for nvme_csd.gpu.LayerLoader: the same class with or without the GPU
// part (without, making one raises), so that _core and its stubs look the same either way.
using LayerTensors = std::vector<std::vector<std::tuple<std::string, uint64_t, uint64_t>>>;
struct PyLayerLoader {
#ifdef CSD_HAVE_GPU
    // what the loader uses, kept while it lives (a closed device stays until the loader goes)
    std::shared_ptr<Device> dev;
    std::shared_ptr<ObjectStore> store;
    std::shared_ptr<gpu::Landing> land;
    std::vector<std::unique_ptr<gpu::Landing>> extra;  // lanes beyond the device's landing
    std::unique_ptr<gpu::LayerLoader> loader;
    gpu::LayerLoader &get()
    {
        if (!loader) throw Error("the layer loader is closed", EBADF);
        return *loader;
    }
#endif
    // Stops the loader thread and waits for its GPU work (call with the GIL released).
    void close()
    {
#ifdef CSD_HAVE_GPU
        loader.reset();
        extra.clear();
        land.reset();
        store.reset();
        dev.reset();
#endif
    }
    ~PyLayerLoader() { close(); }
};

void bind_layer_loader(py::module_ &m)
{
    [[maybe_unused]] const auto no_gpu = [] { return Error("this nvme_csd was built without CUDA", ENODEV); };
    py::class_<PyLayerLoader>(m, "GpuLayerLoader", "csd::gpu::LayerLoader: use nvme_csd.gpu.LayerLoader")
        .def(py::init([no_gpu](PyDevice &p, const LayerTensors &layers, const std::vector<uint64_t> &layer_bytes,
                               const std::vector<int> &resident, const std::vector<uintptr_t> &buffers,
                               const std::vector<uint64_t> &buffer_bytes, bool direct, int lanes) {
#ifdef CSD_HAVE_GPU
                 if (layers.size() != layer_bytes.size()) throw Error("layers and layer_bytes differ in length", EINVAL);
                 std::vector<gpu::LayerPlan> plans(layers.size());
                 for (size_t i = 0; i < layers.size(); i++) {
                     for (const auto &[name, offset, bytes] : layers[i]) plans[i].tensors.push_back({name, offset, bytes});
                     plans[i].bytes = layer_bytes[i];
                 }
                 std::vector<void *> ptrs;
                 for (uintptr_t b : buffers) ptrs.push_back(reinterpret_cast<void *>(b));
                 auto l = std::make_unique<PyLayerLoader>();
                 const Use u(p);
                 l->dev = u.keep();
                 l->store = u.store();
                 l->land = u.land();
                 if (lanes < 1) throw Error("lanes must be at least 1", EINVAL);
                 py::gil_scoped_release g;
                 std::vector<gpu::Landing *> use{l->land.get()};
                 for (int i = 1; i < lanes; i++) {
                     l->extra.push_back(std::make_unique<gpu::Landing>(*l->dev));
                     use.push_back(l->extra.back().get());
                 }
                 l->loader = std::make_unique<gpu::LayerLoader>(use, *l->store, std::move(plans), resident, ptrs,
                                                                 buffer_bytes, direct);
                 return l;
#else
                 (void)p, (void)layers, (void)layer_bytes, (void)resident, (void)buffers, (void)buffer_bytes, (void)direct,
                     (void)lanes;
                 throw no_gpu();
                 return std::unique_ptr<PyLayerLoader>();
#endif
             }),
             py::arg("dev"), py::arg("layers"), py::arg("layer_bytes"), py::arg("resident"), py::arg("buffers"),
             py::arg("buffer_bytes"), py::arg("direct") = true, py::arg("lanes") = 1)
        // the address of layer i's buffer once landed and checked (waits without the GIL)
        .def("acquire", [no_gpu](PyLayerLoader &l, int layer, uintptr_t stream) -> uintptr_t {
#ifdef CSD_HAVE_GPU
            gpu::LayerLoader &x = l.get();
            py::gil_scoped_release g;
            return reinterpret_cast<uintptr_t>(x.acquire(layer, reinterpret_cast<cudaStream_t>(stream)));
#else
            (void)l, (void)layer, (void)stream;
            throw no_gpu();
#endif
        }, py::arg("layer"), py::arg("stream"))
        .def("release", [no_gpu](PyLayerLoader &l, int layer, uintptr_t stream) {
#ifdef CSD_HAVE_GPU
            l.get().release(layer, reinterpret_cast<cudaStream_t>(stream));
#else
            (void)l, (void)layer, (void)stream;
            throw no_gpu();
#endif
        }, py::arg("layer"), py::arg("stream"))
        // every landing so far: dicts of layer, pass, buffer, resident, bytes, start, wait, land, stall, path
        .def("timings", [no_gpu](PyLayerLoader &l) {
            py::list out;
#ifdef CSD_HAVE_GPU
            for (const gpu::LayerTiming &t : l.get().timings()) {
                py::dict d;
                d["layer"] = t.layer;
                d["pass"] = t.pass;
                d["buffer"] = t.buffer;
                d["resident"] = t.resident;
                d["bytes"] = t.bytes;
                d["start"] = t.start;
                d["wait"] = t.wait;
                d["land"] = t.land;
                d["stall"] = t.stall;
                d["path"] = t.path;
                out.append(d);
            }
#else
            (void)l;
            throw no_gpu();
#endif
            return out;
        })
        .def("clear_timings", [no_gpu](PyLayerLoader &l) {
#ifdef CSD_HAVE_GPU
            l.get().clear_timings();
#else
            (void)l;
            throw no_gpu();
#endif
        })
        .def_property_readonly("restarts", [no_gpu](PyLayerLoader &l) -> uint64_t {
#ifdef CSD_HAVE_GPU
            return l.get().restarts();
#else
            (void)l;
            throw no_gpu();
#endif
        })
        .def("close", [](PyLayerLoader &l) {
            py::gil_scoped_release g;
            l.close();
        });
}

PYBIND11_MODULE(_core, m)
{
    m.doc() = "libcsd bindings (use the nvme_csd package, not this module)";
    m.attr("WIRE") = wire_format();
    m.def("status_name", [](uint16_t status) { return status_name(status); },
          "English name of an NVMe status value");
    m.def("canonical_dtype", [](const std::string &text) { return npy::canonical_dtype(text); },
          "A dtype's text as the object store records it (csd/npy.hpp); CsdError if it is none");
    m.def("npy_header_size", [](const py::bytes &b) {
        const std::string_view v(b);
        return npy::header_size(reinterpret_cast<const uint8_t *>(v.data()), v.size());
    }, "The length of a .npy header from the file's first 12 bytes; CsdError if they do not begin one");
    m.def("npy_parse_header", [](const py::bytes &b) {
        const std::string_view v(b);
        const npy::Header h = npy::parse_header(reinterpret_cast<const uint8_t *>(v.data()), v.size());
        py::dict d;
        d["dtype"] = h.dtype;
        d["shape"] = h.shape;
        d["data_bytes"] = h.data_bytes;
        d["size"] = h.size;
        return d;
    }, "A .npy header (the file's first npy_header_size bytes) as the store reads it: dtype, shape, data_bytes, size");
    m.def("npy_header_bytes", [](const std::string &dtype, const std::vector<uint64_t> &shape) {
        const std::vector<uint8_t> h = npy::header(dtype, shape);
        return py::bytes(reinterpret_cast<const char *>(h.data()), h.size());
    }, "The .npy header csdctl and the store write for an array of this dtype and shape");

    // csd::Error -> nvme_csd.errors.CsdError subclass chosen by status
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const Error &e) {
            py::gil_scoped_acquire g;
            py::object make = py::module_::import("nvme_csd.errors").attr("make_error");
            py::object exc = make(e.what(), e.status(), e.errnum(), e.dw0(), e.dw1());
            PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc.ptr())), exc.ptr());
        }
    });

    // Before Device, whose methods return it: their signatures (and _core's stubs) name it.
    py::class_<PySlmView>(m, "SlmView", py::buffer_protocol(),
                          "a zero-copy view of SLM bytes; it keeps the device's memory while it lives")
        .def_buffer([](PySlmView &v) {
            return py::buffer_info(v.ptr, 1, py::format_descriptor<uint8_t>::format(), 1,
                                   {static_cast<py::ssize_t>(v.len)}, {py::ssize_t{1}});
        });

    py::class_<PySlm, std::shared_ptr<PySlm>>(m, "SlmBuffer")
        .def_property_readonly("offset", [](PySlm &s) { return s.buf.offset(); })
        .def_property_readonly("size", [](PySlm &s) { return s.buf.size(); })
        .def_property_readonly("freed", [](PySlm &s) { return !s.buf; })
        .def("free", [](PySlm &s) { s.free(); });

    py::class_<PyDevice, std::shared_ptr<PyDevice>>(m, "Device")
        .def(py::init([](const std::string &path, bool uring, unsigned qd, const std::string &front_end,
                         bool read_only) {
                 OpenOptions o;
                 o.use_uring = uring;
                 o.queue_depth = qd;
                 o.front_end = parse_front_end(front_end);
                 o.read_only = read_only;
                 auto p = std::make_shared<PyDevice>();
                 py::gil_scoped_release r;
                 p->dev = Device::open(path, o);
                 return p;
             }),
             py::arg("path"), py::arg("uring") = false, py::arg("queue_depth") = 64, py::arg("front_end") = "auto",
             py::arg("read_only") = false)
        .def_property_readonly("read_only", [](PyDevice &p) {
            const Use u(p);
            return u.d().read_only();
        })
        // Releases the device now (its SLM, its file): new calls raise DeviceClosed, the
        // Executes in flight are asked to stop, the calls under way end first.
        .def("close", [](PyDevice &p) { p.close(); })
        .def_property_readonly("closed", [](PyDevice &p) {
            std::lock_guard<std::mutex> g(p.mu);
            return p.closed;
        })
        .def_property_readonly("transport", [](PyDevice &p) {
            const Use u(p);
            return std::string(u.d().transport().name());
        })
        .def_property_readonly("front_end", [](PyDevice &p) {
            const Use u(p);
            return std::string(front_end_name(u.d().front_end()));
        })
        .def_property_readonly("speaks", [](PyDevice &p) {
            const Use u(p);
            return std::string(u.d().speaks());
        })
        .def_property_readonly("where", [](PyDevice &p) {
            const Use u(p);
            return std::string(where_name(u.d().where()));
        })
        .def_property_readonly("model_clock_ns", [](PyDevice &p) {
            const Use u(p);
            return u.d().model_clock_ns();
        }, "the timing model's clock in ns: the in-process device's virtual clock with exact=on")
        .def("capabilities", [](PyDevice &p) {
            const Use u(p);
            const Capabilities &c = u.d().caps();
            py::dict d;
            d["version"] = c.version;
            d["slm_size"] = c.slm_size;
            d["compute_units"] = c.compute_units;
            d["max_desc_len"] = c.max_desc_len;
            d["max_ranges"] = c.max_ranges;
            d["max_program_bytes"] = c.max_program_bytes;
            d["downloadable_slots"] = c.downloadable_slots;
            d["program_types"] = c.program_types;
            d["features"] = c.features;
            d["max_chase_hops"] = c.max_chase_hops;
            py::dict sources;
            for (const auto &[field, from] : c.sources) sources[py::str(field)] = cap_source_name(from);
            d["sources"] = sources;
            py::list progs;
            for (const auto &x : c.programs) progs.append(py::make_tuple(x.id, x.name, x.type));
            d["programs"] = progs;
            return d;
        })
        .def("namespace", [](PyDevice &p) {
            const Use u(p);
            const NamespaceInfo n = u.d().ns();
            py::dict d;
            d["nsid"] = n.nsid;
            d["lba_size"] = n.lba_size;
            d["lba_count"] = n.lba_count;
            return d;
        })
        .def("statistics", [](PyDevice &p) {
            const Use u(p);
            return statistics_dict(u.d());
        })
        .def("bus", [](PyDevice &p) {
            const Use u(p);
            const BusCounters b = u.d().bus();
            return py::make_tuple(b.commands, b.bytes_to_device, b.bytes_from_device);
        })
        .def("slm_alloc", [](std::shared_ptr<PyDevice> p, uint64_t size, uint64_t align) {
            const Use u(*p);
            auto s = std::make_shared<PySlm>();
            s->owner = p;
            s->buf = u.d().slm().alloc(size, align);
            return s;
        }, py::arg("size"), py::arg("align") = 4096)
        .def("slm_write", [](PyDevice &p, uint64_t off, const py::buffer &b) {
            const Use u(p);
            InBuf in(b);
            py::gil_scoped_release r;
            u.d().slm_write(off, in.ptr(), in.size());
        })
        .def("slm_read_into", [](PyDevice &p, uint64_t off, const py::buffer &b) {
            const Use u(p);
            OutBuf out(b);
            py::gil_scoped_release r;
            u.d().slm_read(off, out.ptr(), out.size());
        })
        .def("slm_load", [](PyDevice &p, uint64_t slba, uint64_t nlb, uint64_t off) {
            const Use u(p);
            py::gil_scoped_release r;
            u.d().slm_load(slba, nlb, off);
        })
        .def("slm_store", [](PyDevice &p, uint64_t slba, uint64_t nlb, uint64_t off) {
            const Use u(p);
            py::gil_scoped_release r;
            u.d().slm_store(slba, nlb, off);
        })
        .def("execute", [](PyDevice &p, uint16_t program, const std::vector<std::pair<uint64_t, uint64_t>> &ranges,
                           const py::bytes &params) {
            const Use u(p);
            std::vector<Range> rr;
            for (auto &[o, l] : ranges) rr.push_back({o, l});
            std::string ps = params;
            ExecResult x;
            {
                py::gil_scoped_release r;
                x = u.d().execute(program, rr, ps.data(), static_cast<uint32_t>(ps.size()));
            }
            return py::make_tuple(x.dw0, x.dw1);
        })
        .def("program_load", [](PyDevice &p, const py::bytes &image, uint32_t record_size, uint16_t slot) {
            const Use u(p);
            std::string img = image;
            py::gil_scoped_release r;
            return u.d().program_load(img.data(), static_cast<uint32_t>(img.size()), record_size, slot);
        })
        .def("program_unload", [](PyDevice &p, uint16_t slot) {
            const Use u(p);
            py::gil_scoped_release r;
            u.d().program_unload(slot);
        })
        .def("slm_host_view", [](PyDevice &p, uint64_t off, uint64_t len) -> py::object {
            const Use u(p);
            uint8_t *base = u.d().slm_host_pointer();
            if (!base) return py::none();
            if (off > u.d().caps().slm_size || len > u.d().caps().slm_size - off) throw Error("SLM view", ERANGE);
            return py::cast(PySlmView{u.keep(), base + off, static_cast<size_t>(len)});
        })
        // object store
        .def("store_format", [](PyDevice &p, bool force) {
            const Use u(p);
            {
                std::lock_guard<std::mutex> g(p.mu);
                p.store.reset();  // a call under way keeps the old one
            }
            py::gil_scoped_release r;
            ObjectStore::format(u.d(), force);
        }, py::arg("force") = false)
        .def("store_put", [](PyDevice &p, const std::string &name, const py::buffer &b, const std::string &dtype,
                             const std::vector<uint64_t> &shape, py::object progress) {
            const Use u(p);
            InBuf in(b);
            const auto s = u.store();
            PyProgress pr(std::move(progress));
            pr.run([&] { s->put(name, in.ptr(), in.size(), dtype, shape, pr.callback()); });
        }, py::arg("name"), py::arg("data"), py::arg("dtype"), py::arg("shape"), py::arg("progress") = py::none(),
           "stores an object; progress(done, total) is called as its bytes are written")
        .def("store_put_fd", [](PyDevice &p, const std::string &name, int fd, int64_t size, const std::string &dtype,
                                const std::vector<uint64_t> &shape, py::object progress) {
            const Use u(p);
            const auto s = u.store();
            PyProgress pr(std::move(progress));
            FdSource src(fd, "fd " + std::to_string(fd), size < 0 ? ObjectSource::kUnknownSize : uint64_t(size));
            pr.run([&] { s->put(name, src, dtype, shape, pr.callback()); });
        }, py::arg("name"), py::arg("fd"), py::arg("size"), py::arg("dtype"), py::arg("shape"),
           py::arg("progress") = py::none(),
           "streams an object from a file descriptor (size < 0: a regular file's rest, else until its end)")
        .def("store_put_reader", [](PyDevice &p, const std::string &name, py::object read, int64_t size,
                                    const std::string &dtype, const std::vector<uint64_t> &shape, py::object progress) {
            const Use u(p);
            const auto s = u.store();
            PyProgress pr(std::move(progress));
            // read(n) -> bytes (b"" at the end), as a file object's read
            struct Reader : ObjectSource {
                PyProgress &pr;
                py::object &fn;
                uint64_t n;
                Reader(PyProgress &p, py::object &f, uint64_t size) : pr(p), fn(f), n(size) {}
                uint64_t size() const override { return n; }
                uint64_t read(uint8_t *buf, uint64_t want) override
                {
                    return pr.call("read", [&]() -> uint64_t {
                        const py::bytes b = fn(want);
                        const std::string_view v(b);
                        if (v.size() > want) throw Error("read(n) gave more than n bytes", EINVAL);
                        std::memcpy(buf, v.data(), v.size());
                        return v.size();
                    });
                }
            } src(pr, read, size < 0 ? ObjectSource::kUnknownSize : uint64_t(size));
            pr.run([&] { s->put(name, src, dtype, shape, pr.callback()); });
        }, py::arg("name"), py::arg("read"), py::arg("size"), py::arg("dtype"), py::arg("shape"),
           py::arg("progress") = py::none(), "streams an object from read(n) -> bytes (size < 0: until b\"\")")
        .def("store_put_mapped", [](PyDevice &p, const std::string &name, const py::buffer &b, const std::string &dtype,
                                    const std::vector<uint64_t> &shape, py::object progress) {
            const Use u(p);
            InBuf in(b);
            const auto s = u.store();
            PyProgress pr(std::move(progress));
            MemorySource src(in.ptr(), in.size(), true);
            pr.run([&] { s->put(name, src, dtype, shape, pr.callback()); });
        }, py::arg("name"), py::arg("data"), py::arg("dtype"), py::arg("shape"), py::arg("progress") = py::none(),
           "streams an object from a memory map, paging out what it has read")
        .def("store_get_fd", [](PyDevice &p, const std::string &name, int fd, bool npy_header, py::object progress) {
            const Use u(p);
            const auto s = u.store();
            PyProgress pr(std::move(progress));
            FdSink sink(fd, "fd " + std::to_string(fd));
            if (npy_header) {
                sink.header = [](const ObjectInfo &o) {
                    if (!o.is_tensor()) throw Error("object '" + o.name + "' is a blob, not a tensor: no .npy file", EINVAL);
                    return npy::header(o.dtype, o.shape);
                };
            }
            return object_info(pr.run([&] { return s->get_into(name, sink, pr.callback()); }));
        }, py::arg("name"), py::arg("fd"), py::arg("npy_header"), py::arg("progress") = py::none(),
           "streams a whole object to a file descriptor, checked (a .npy header first with npy_header)")
        .def("store_get_writer", [](PyDevice &p, const std::string &name, py::object write, py::object progress) {
            const Use u(p);
            const auto s = u.store();
            PyProgress pr(std::move(progress));
            StreamSink sink([&](uint64_t pos, const uint8_t *data, uint64_t n) {
                pr.call("write", [&] {
                    write(pos, py::memoryview::from_memory(data, static_cast<py::ssize_t>(n)));
                });
            });
            return object_info(pr.run([&] { return s->get_into(name, sink, pr.callback()); }));
        }, py::arg("name"), py::arg("write"), py::arg("progress") = py::none(),
           "streams a whole object through write(pos, memoryview), checked at its end")
        .def("store_read_into", [](PyDevice &p, const std::string &name, uint64_t off, const py::buffer &b) {
            const Use u(p);
            OutBuf out(b);
            const auto s = u.store();
            py::gil_scoped_release r;
            s->read(name, off, out.size(), out.ptr());
        })
        // The whole object into a buffer, CRC-checked; the generation of the version that landed.
        .def("store_get_into", [](PyDevice &p, const std::string &name, const py::buffer &b, py::object progress) {
            const Use u(p);
            OutBuf out(b);
            const auto s = u.store();
            PyProgress pr(std::move(progress));
            return pr.run([&] {
                MemorySink sink(out.ptr(), out.size());
                return s->get_into(name, sink, pr.callback()).generation;
            });
        }, py::arg("name"), py::arg("out"), py::arg("progress") = py::none(),
           "reads a whole object into out, checked; progress(done, total) as its bytes land")
        .def("store_stat", [](PyDevice &p, const std::string &name) {
            const Use u(p);
            return object_info(released([&] { return u.store()->stat(name); }));
        })
        .def("store_list", [](PyDevice &p) {
            const Use u(p);
            py::list l;
            for (const auto &o : released([&] { return u.store()->list(); })) l.append(object_info(o));
            return l;
        })
        .def("store_remove", [](PyDevice &p, const std::string &name) {
            const Use u(p);
            const auto s = u.store();
            py::gil_scoped_release r;
            s->remove(name);
        })
        .def("store_exists", [](PyDevice &p, const std::string &name) {
            const Use u(p);
            return released([&] { return u.store()->exists(name); });
        })
        .def("store_generation", [](PyDevice &p) {
            const Use u(p);
            return released([&] { return u.store()->generation(); });
        })
        .def("store_reclaim", [](PyDevice &p, uint64_t max_age) {
            const Use u(p);
            const auto s = u.store();
            py::gil_scoped_release r;
            return s->reclaim(max_age);
        })
        .def("store_reservations", [](PyDevice &p) {
            const Use u(p);
            py::list l;
            for (const auto &x : released([&] { return u.store()->reservations(); })) l.append(reservation_info(x));
            return l;
        })
        .def("store_load", [](std::shared_ptr<PyDevice> p, const std::string &name) {
            const Use u(*p);
            auto s = std::make_shared<PySlm>();
            s->owner = p;
            const auto st = u.store();
            py::gil_scoped_release r;
            s->buf = st->load(name);
            return s;
        })
        // The store's programs over objects of any size (StreamOptions: SLM budget, progress).
        .def("store_filter", [](PyDevice &p, const std::string &src, const std::string &dst, uint32_t record_size,
                                uint32_t field_offset, uint16_t field_type, uint16_t op, double lo, double hi,
                                int64_t lo_int, int64_t hi_int, bool indices, uint64_t slm_budget, py::object progress) {
            const Use u(p);
            const FilterSpec s = filter_spec(record_size, field_offset, field_type, op, lo, hi, lo_int, hi_int, indices);
            const auto st = u.store();
            PyProgress pr(std::move(progress));
            const FilterResult r = pr.run([&] { return st->filter(src, s, dst, stream_options(slm_budget, pr)); });
            return py::make_tuple(r.matches, r.bytes);
        }, py::arg("src"), py::arg("dst"), py::arg("record_size"), py::arg("field_offset"), py::arg("field_type"),
           py::arg("op"), py::arg("lo"), py::arg("hi"), py::arg("lo_int"), py::arg("hi_int"), py::arg("indices"),
           py::arg("slm_budget") = 0, py::arg("progress") = py::none())
        .def("store_checksum", [](PyDevice &p, const std::string &name, uint32_t algo, uint64_t slm_budget,
                                  py::object progress) {
            const Use u(p);
            const auto st = u.store();
            PyProgress pr(std::move(progress));
            return pr.run([&] { return st->checksum(name, static_cast<ChecksumAlgo>(algo), stream_options(slm_budget, pr)); });
        }, py::arg("name"), py::arg("algo"), py::arg("slm_budget") = 0, py::arg("progress") = py::none())
        .def("store_reduce", [](PyDevice &p, const std::string &name, uint32_t op, uint64_t slm_budget,
                                py::object progress, bool whole) {
            const Use u(p);
            const auto st = u.store();
            PyProgress pr(std::move(progress));
            const std::vector<uint64_t> bits =
                pr.run([&] { return st->reduce(name, static_cast<ReduceOp>(op), stream_options(slm_budget, pr), whole); });
            return py::bytes(reinterpret_cast<const char *>(bits.data()), bits.size() * 8);
        }, py::arg("name"), py::arg("op"), py::arg("slm_budget") = 0, py::arg("progress") = py::none(),
           py::arg("whole") = false, "the reduce program's 8-byte results, one a row, as bytes")
        .def("store_convert", [](PyDevice &p, const std::string &src, uint32_t op, const std::string &dst, float scale,
                                 int32_t zero_point, uint64_t slm_budget, py::object progress) {
            const Use u(p);
            const auto st = u.store();
            PyProgress pr(std::move(progress));
            return pr.run([&] {
                return st->convert(src, static_cast<ConvertOp>(op), dst, scale, zero_point, stream_options(slm_budget, pr));
            });
        }, py::arg("src"), py::arg("op"), py::arg("dst"), py::arg("scale") = 1.0f, py::arg("zero_point") = 0,
           py::arg("slm_budget") = 0, py::arg("progress") = py::none())
        .def("store_decompress", [](PyDevice &p, const std::string &src, uint32_t codec, const std::string &dst,
                                    uint64_t slm_budget, py::object progress) {
            const Use u(p);
            const auto st = u.store();
            PyProgress pr(std::move(progress));
            return pr.run([&] { return st->decompress(src, static_cast<Codec>(codec), dst, stream_options(slm_budget, pr)); });
        }, py::arg("src"), py::arg("codec"), py::arg("dst"), py::arg("slm_budget") = 0, py::arg("progress") = py::none())
        .def("store_gemm", [](PyDevice &p, const std::string &a, const std::string &b, const std::string &c,
                              uint64_t slm_budget, py::object progress) {
            const Use u(p);
            const auto st = u.store();
            PyProgress pr(std::move(progress));
            pr.run([&] { st->gemm(a, b, c, stream_options(slm_budget, pr)); });
        }, py::arg("a"), py::arg("b"), py::arg("c"), py::arg("slm_budget") = 0, py::arg("progress") = py::none())
        .def("store_run_program", [](PyDevice &p, uint16_t slot, uint32_t record_size, uint32_t mode,
                                     const std::string &src, const std::string &dst, std::vector<uint64_t> params,
                                     uint64_t slm_budget, py::object progress) {
            const Use u(p);
            const auto st = u.store();
            PyProgress pr(std::move(progress));
            const FilterResult r = pr.run([&] {
                Program prog = Program::attach(u.d(), slot, record_size);
                prog.keep();  // the Python Program unloads it
                return st->run_program(prog, mode, src, dst, params, stream_options(slm_budget, pr));
            });
            return py::make_tuple(r.matches, r.bytes);
        }, py::arg("slot"), py::arg("record_size"), py::arg("mode"), py::arg("src"), py::arg("dst"), py::arg("params"),
           py::arg("slm_budget") = 0, py::arg("progress") = py::none(),
           "a downloaded program over an object's records: (matches or records, bytes or sum)");

    // several drives as one (csd::DriveSet, docs/drive-set.md)
    py::class_<DriveSet>(m, "DriveSet")
        .def(py::init([](const std::vector<std::string> &paths, bool uring, const std::string &front_end,
                         bool read_only) {
                 OpenOptions o;
                 o.use_uring = uring;
                 o.front_end = parse_front_end(front_end);
                 o.read_only = read_only;
                 py::gil_scoped_release r;
                 return DriveSet::open(paths, o);
             }),
             py::arg("paths"), py::arg("uring") = false, py::arg("front_end") = "auto", py::arg("read_only") = false)
        .def("size", &DriveSet::size)
        .def("statistics", [](DriveSet &s, size_t i) { return statistics_dict(s.drive(i)); },
             "drive i's statistics log page as a dict")
        .def("bus", [](DriveSet &s) {
            BusCounters t;
            for (size_t i = 0; i < s.size(); i++) {
                const BusCounters b = s.drive(i).bus();
                t.commands += b.commands, t.bytes_to_device += b.bytes_to_device, t.bytes_from_device += b.bytes_from_device;
            }
            return py::make_tuple(t.commands, t.bytes_to_device, t.bytes_from_device);
        })
        .def("home", &DriveSet::home)
        .def("name", &DriveSet::name)
        .def("part_name", &DriveSet::part_name)
        .def("format", [](DriveSet &d, bool force) {
            py::gil_scoped_release r;
            d.format(force);
        }, py::arg("force") = false)
        .def("put", [](DriveSet &d, const std::string &name, const py::buffer &b, const std::string &dtype,
                       const std::vector<uint64_t> &shape, const std::string &placement) {
            InBuf in(b);
            py::gil_scoped_release r;
            if (placement == "striped") d.put_striped(name, in.ptr(), in.size(), dtype, shape);
            else if (placement == "replicated") d.put_replicated(name, in.ptr(), in.size(), dtype, shape);
            else d.put(name, in.ptr(), in.size(), dtype, shape);
        })
        .def("get", [](DriveSet &d, const std::string &name) {
            std::vector<uint8_t> v;
            {
                py::gil_scoped_release r;
                v = d.get(name);
            }
            return py::bytes(reinterpret_cast<const char *>(v.data()), v.size());
        })
        .def("stat", [](DriveSet &d, const std::string &name) { return object_info(d.stat(name)); })
        .def("striped", &DriveSet::striped)
        .def("list", [](DriveSet &d) {
            py::list l;
            for (const auto &o : d.list()) l.append(object_info(o));
            return l;
        })
        .def("remove", [](DriveSet &d, const std::string &name) {
            py::gil_scoped_release r;
            d.remove(name);
        })
        .def("filter", [](DriveSet &d, const std::string &src, const std::string &dst, uint32_t record_size,
                          uint32_t field_offset, uint16_t field_type, uint16_t op, double lo, double hi,
                          int64_t lo_int, int64_t hi_int) {
            const FilterSpec s = filter_spec(record_size, field_offset, field_type, op, lo, hi, lo_int, hi_int, false);
            py::gil_scoped_release g;
            return d.filter(src, s, dst).matches;
        })
        .def("reduce", [](DriveSet &d, const std::string &name, uint32_t op) {
            py::gil_scoped_release g;
            return d.reduce(name, static_cast<ReduceOp>(op));
        })
        .def("gemm", [](DriveSet &d, const std::string &a, const std::string &b, const std::string &c) {
            py::gil_scoped_release g;
            d.gemm(a, b, c);
        });

#ifdef CSD_HAVE_GPU
    m.attr("has_gpu_part") = true;
    m.def("gpu_available", [] { return gpu::available(); });
    auto report = [](const gpu::CopyReport &r) { return py::make_tuple(r.path, r.bytes, r.seconds); };
    m.def("gpu_slm_to_gpu", [report](PyDevice &p, uint64_t off, uint64_t len, uintptr_t dst, uintptr_t stream, bool direct) {
        const Use u(p);
        gpu::CopyReport r;
        {
            py::gil_scoped_release g;
            r = u.land()->slm_to_gpu(off, len, reinterpret_cast<void *>(dst), reinterpret_cast<cudaStream_t>(stream), direct).get();
        }
        return report(r);
    });
    // (path, bytes, seconds, generation of the version that landed)
    m.def("gpu_object_to_gpu", [](PyDevice &p, const std::string &name, uintptr_t dst, uint64_t dst_bytes, uintptr_t stream) {
        const Use u(p);
        const auto s = u.store();
        gpu::CopyReport r;
        {
            py::gil_scoped_release g;
            r = u.land()->object_to_gpu(*s, name, reinterpret_cast<void *>(dst), dst_bytes, reinterpret_cast<cudaStream_t>(stream)).get();
        }
        return py::make_tuple(r.path, r.bytes, r.seconds, r.object.generation);
    });
    m.def("gpu_configure", [](PyDevice &p, uint64_t chunk, int buffers, int readers) {
        const Use u(p);  // a new pipeline (a call under way keeps the old one)
        auto fresh = std::make_shared<gpu::Landing>(u.d(), chunk, buffers, readers);
        std::lock_guard<std::mutex> g(p.mu);
        p.landing = std::move(fresh);
    });
#else
    // The same functions, refusing: the module (and its stubs) look the same either way.
    m.attr("has_gpu_part") = false;
    m.def("gpu_available", [] { return false; });
    const auto no_gpu = [] { return Error("this nvme_csd was built without CUDA", ENODEV); };
    m.def("gpu_slm_to_gpu", [no_gpu](PyDevice &, uint64_t, uint64_t, uintptr_t, uintptr_t,
                                     bool) -> std::tuple<std::string, uint64_t, double> {
        throw no_gpu();
    });
    m.def("gpu_object_to_gpu", [no_gpu](PyDevice &, const std::string &, uintptr_t, uint64_t,
                                        uintptr_t) -> std::tuple<std::string, uint64_t, double, uint64_t> {
        throw no_gpu();
    });
    m.def("gpu_configure", [no_gpu](PyDevice &, uint64_t, int, int) { throw no_gpu(); });
#endif
    bind_layer_loader(m);

    bind_programs(m);
}
