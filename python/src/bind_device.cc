// SPDX-License-Identifier: MIT
// bind_device.cc - nvme_csd._core.Device (a drive: capabilities, SLM, Execute, programs, its
// zero-copy views) and SlmBuffer/SlmView; the PyDevice it wraps, closed safely also across fork().
#include <pthread.h>

#include <chrono>
#include <optional>

#include "bindings.hpp"

namespace pycsd {

namespace {

// The PyDevices of this process, for fork(): a child has only the forking thread, so its
// devices count only that thread's Uses (the other threads' calls are not in the child).
std::mutex g_devices_mu;
std::vector<PyDevice *> g_devices;
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

}  // namespace

thread_local std::vector<const PyDevice *> t_held;

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
            if (dv) {  // dev lives: only close() clears it, after the wait
                dv->abort_executes();
                dv->slm().stop_waits();  // a call waiting for SLM may wait for a run in this close()
            }
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

void bind_slm(py::module_ &m)
{
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
}

PyDeviceClass bind_device(py::module_ &m)
{
    PyDeviceClass cls(m, "Device");
    cls
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
        });
    return cls;
}

}  // namespace pycsd
