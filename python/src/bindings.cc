// SPDX-License-Identifier: MIT
// bindings.cc - nvme_csd._core: libcsd for Python (pybind11). Thin: the Pythonic layer
// (numpy/torch/DLPack, program wrappers, the store mapping) is nvme_csd/*.py. Every call
// that talks to the device releases the GIL, so threads overlap device work.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
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
#include "csd_spec.h"
#include "nvme_cs.h"
#ifdef CSD_HAVE_GPU
#include "gpu.hpp"
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
// it on the calling thread with the GIL released, so it takes the GIL; the first exception
// it raises is kept and raised once the operation has finished (the data is not left half
// written by an exception thrown through libcsd).
struct PyProgress {
    py::object fn;
    std::unique_ptr<py::error_already_set> err;

    explicit PyProgress(py::object f) : fn(std::move(f)) {}
    Progress callback()
    {
        if (fn.is_none()) return {};
        return [this](uint64_t done, uint64_t total) {
            py::gil_scoped_acquire g;
            if (err) return;
            try {
                fn(done, total);
            } catch (py::error_already_set &e) {
                err = std::make_unique<py::error_already_set>(std::move(e));
            }
        };
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

struct PyDevice {
    std::unique_ptr<Device> dev;
    std::unique_ptr<ObjectStore> store;
#ifdef CSD_HAVE_GPU
    std::unique_ptr<gpu::Landing> landing;
    gpu::Landing &land()
    {
        std::lock_guard<std::mutex> g(init_mu);
        if (!landing) landing = std::make_unique<gpu::Landing>(d());
        return *landing;
    }
#endif
    bool closed = false;
    Device &d()
    {
        if (closed || !dev) throw Error("the device is closed", EBADF);
        return *dev;
    }
    std::mutex init_mu;  // store and landing are made lazily, maybe from several threads
    ObjectStore &s()
    {
        std::lock_guard<std::mutex> g(init_mu);
        if (!store) store = std::make_unique<ObjectStore>(d());
        return *store;
    }
};

struct PySlm {
    std::shared_ptr<PyDevice> owner;
    SlmBuffer buf;
    // After the device was closed its allocator is gone: nothing left to free.
    ~PySlm()
    {
        if (owner && !owner->dev) buf.detach();
    }
    void free()
    {
        if (owner && !owner->dev) buf.detach();
        buf.reset();
    }
};

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
        py::gil_scoped_release g;
        return programs::copy(d.d(), rng(src), rng(dst));
    }, "copy: dst = src; returns the bytes copied");
    p.def("gemm", [](PyDevice &d, PyRange a, PyRange b, PyRange c, uint32_t m_, uint32_t n, uint32_t k, bool trans_a,
                     bool trans_b, float alpha, float beta) {
        py::gil_scoped_release g;
        programs::gemm(d.d(), rng(a), rng(b), rng(c), m_, n, k, trans_a, trans_b, alpha, beta);
    }, "gemm: C = alpha op(A) op(B) + beta C, f32 row-major, m x n");
    p.def("elementwise", [](PyDevice &d, uint32_t op, PyRange x, PyRange y, PyRange out, uint32_t count) {
        py::gil_scoped_release g;
        programs::elementwise(d.d(), static_cast<EwOp>(op), rng(x), rng(y), rng(out), count);
    }, "elementwise, binary: out = x op y over count f32");
    p.def("elementwise", [](PyDevice &d, uint32_t op, PyRange x, PyRange out, uint32_t count, float a, float b) {
        py::gil_scoped_release g;
        programs::elementwise(d.d(), static_cast<EwOp>(op), rng(x), rng(out), count, a, b);
    }, "elementwise, unary: out = op(x) (axpb: a*x+b)");
    p.def("softmax", [](PyDevice &d, PyRange x, PyRange out, uint32_t rows, uint32_t cols) {
        py::gil_scoped_release g;
        programs::softmax(d.d(), rng(x), rng(out), rows, cols);
    }, "softmax of each row");
    p.def("reduce", [](PyDevice &d, uint32_t op, uint32_t dtype, PyRange x, PyRange out, uint32_t rows, uint32_t cols) {
        py::gil_scoped_release g;
        programs::reduce(d.d(), static_cast<ReduceOp>(op), static_cast<DType>(dtype), rng(x), rng(out), rows, cols);
    }, "reduce: one 8-byte result per row into out");
    p.def("filter", [](PyDevice &d, PyRange records, PyRange out, uint32_t record_size, uint32_t count,
                       uint32_t field_offset, uint16_t field_type, uint16_t op, bool indices, double lo, double hi,
                       int64_t lo_int, int64_t hi_int) {
        FilterSpec s = filter_spec(record_size, field_offset, field_type, op, lo, hi, lo_int, hi_int, indices);
        s.count = count;
        py::gil_scoped_release g;
        const FilterResult r = programs::filter(d.d(), rng(records), rng(out), s);
        return std::make_pair(r.bytes, r.matches);
    }, "filter into a fixed output range: (bytes written, matches); Output Overflow if it is small");
    p.def("convert", [](PyDevice &d, uint32_t op, PyRange in, PyRange out, uint32_t count, float scale,
                        int32_t zero_point) {
        py::gil_scoped_release g;
        return programs::convert(d.d(), static_cast<ConvertOp>(op), rng(in), rng(out), count, scale, zero_point);
    }, "convert count elements; returns the bytes written");
    p.def("checksum", [](PyDevice &d, uint32_t algo, PyRange data) {
        py::gil_scoped_release g;
        return programs::checksum(d.d(), static_cast<ChecksumAlgo>(algo), rng(data));
    }, "checksum of a range (CRC-32C or XXH64)");
    p.def("conv2d", [](PyDevice &d, PyRange input, PyRange weight, std::optional<PyRange> bias, PyRange output,
                       std::array<uint32_t, 7> nchwkrs, std::array<uint32_t, 2> stride, std::array<uint32_t, 2> pad,
                       std::array<uint32_t, 2> dilation) {
        const auto [n, c, h, w, k, r, s] = nchwkrs;
        const csd_conv2d_params prm{n, c, h, w, k, r, s, stride[0], stride[1], pad[0], pad[1], dilation[0],
                                    dilation[1], bias ? 1u : 0u};
        py::gil_scoped_release g;
        programs::conv2d(d.d(), rng(input), rng(weight), bias ? rng(*bias) : Range{}, rng(output), prm);
    }, "conv2d, NCHW f32: (n, c, h, w, k, r, s), (stride h, w), (padding h, w), (dilation h, w); bias None or a range");
    p.def("decompress", [](PyDevice &d, uint32_t codec, PyRange in, PyRange out) {
        py::gil_scoped_release g;
        return programs::decompress(d.d(), static_cast<Codec>(codec), rng(in), rng(out));
    }, "decompress; returns the decompressed bytes");
    p.def("downloaded", [](PyDevice &d, uint16_t program, uint32_t mode, PyRange records, PyRange out, uint32_t count,
                           const std::vector<uint64_t> &params) {
        py::gil_scoped_release g;
        Program prog = Program::attach(d.d(), program, 0);  // Program::run sends the mode's ranges
        prog.keep();  // the Python Program owns the slot
        const ExecResult x = prog.run(mode, rng(records), rng(out), count, params);
        return std::make_pair(x.dw0, x.dw1);
    }, "a downloaded program in a mode over count records (chase: records is the result range, count the "
       "hop limit, params[0] the start LBA): (dw0, dw1)");
    p.def("chase", [](PyDevice &d, uint16_t program, uint32_t record_size, uint64_t start_lba,
                      const std::vector<uint64_t> &params, uint32_t max_hops) {
        py::gil_scoped_release g;
        Program prog = Program::attach(d.d(), program, record_size);
        prog.keep();  // the Python Program owns the slot
        const ChaseResult r = prog.run_chase(start_lba, params, max_hops);
        return std::make_pair(r.value, r.hops);
    }, "a downloaded program's chase from start_lba (params[1..] = params): (value, hops)");
    p.def("chase_value", [](PyDevice &d, uint16_t program, uint32_t record_size, uint64_t start_lba,
                            const std::vector<uint64_t> &params, uint32_t max_hops) {
        py::gil_scoped_release g;
        Program prog = Program::attach(d.d(), program, record_size);
        prog.keep();  // the Python Program owns the slot
        return prog.chase_value(start_lba, params, max_hops);
    }, "the same chase as one command: its value from the completion (no hop count read back)");
    p.def("btree_write", [](PyDevice &d, const std::vector<uint64_t> &keys, const std::vector<uint64_t> &values,
                            uint64_t base_lba, uint32_t fanout) {
        py::gil_scoped_release g;
        const BtreeLayout t = btree_write(d.d(), keys, values, base_lba, fanout);
        return std::make_tuple(t.root_lba, t.blocks, t.depth);
    }, "the chase example's B+-tree written from base_lba: (root_lba, blocks, depth)");
    p.def("gather", [](PyDevice &d, PyRange entries, uint32_t count, PyRange out) {
        py::gil_scoped_release g;
        return programs::gather(d.d(), rng(entries), count, rng(out));
    }, "gather: count (lba, offset, length) entries of the namespace into out; returns the bytes written");
    p.def("embedding_bag", [](PyDevice &d, PyRange indices, PyRange offsets, PyRange weights, PyRange out,
                              uint64_t table_lba, uint64_t num_rows, uint32_t row_dim, uint32_t dtype, uint32_t mode,
                              bool index_i32, uint32_t num_bags, bool include_last_offset) {
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
        programs::embedding_bag(d.d(), s, rng(indices), rng(offsets), rng(weights), rng(out));
    }, "embedding_bag of a table on the namespace into out (weights: length 0 for none)");
    p.def("write_blocks", [](PyDevice &d, uint64_t slba, const py::buffer &b) {
        InBuf in(b);
        const uint32_t lba = d.d().ns().lba_size;
        if (in.size() % lba) throw py::value_error("a whole number of blocks is written");
        py::gil_scoped_release g;
        if (in.size()) d.d().write_lbas(slba, in.size() / lba, in.ptr());
    }, "writes whole blocks of the namespace from slba (NVMe Write): where media programs' tables live");
    p.def("read_blocks_into", [](PyDevice &d, uint64_t slba, const py::buffer &b) {
        OutBuf out(b);
        const uint32_t lba = d.d().ns().lba_size;
        if (out.size() % lba) throw py::value_error("a whole number of blocks is read");
        py::gil_scoped_release g;
        if (out.size()) d.d().read_lbas(slba, out.size() / lba, out.ptr());
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

PYBIND11_MODULE(_core, m)
{
    m.doc() = "libcsd bindings (use the nvme_csd package, not this module)";
    m.attr("WIRE") = wire_format();
    m.def("status_name", [](uint16_t status) { return status_name(status); },
          "English name of an NVMe status value");
    m.def("canonical_dtype", [](const std::string &text) { return npy::canonical_dtype(text); },
          "A dtype's text as the object store records it (csd/npy.hpp); CsdError if it is none");

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
    py::class_<PySlm, std::shared_ptr<PySlm>>(m, "SlmBuffer")
        .def_property_readonly("offset", [](PySlm &s) { return s.buf.offset(); })
        .def_property_readonly("size", [](PySlm &s) { return s.buf.size(); })
        .def_property_readonly("freed", [](PySlm &s) { return !s.buf; })
        .def("free", [](PySlm &s) { s.free(); });

    py::class_<PyDevice, std::shared_ptr<PyDevice>>(m, "Device")
        .def(py::init([](const std::string &path, bool uring, unsigned qd, const std::string &front_end) {
                 OpenOptions o;
                 o.use_uring = uring;
                 o.queue_depth = qd;
                 o.front_end = parse_front_end(front_end);
                 auto p = std::make_shared<PyDevice>();
                 py::gil_scoped_release r;
                 p->dev = Device::open(path, o);
                 return p;
             }),
             py::arg("path"), py::arg("uring") = false, py::arg("queue_depth") = 64, py::arg("front_end") = "auto")
        .def("close", [](PyDevice &p) {  // releases the device now (its SLM, its file)
#ifdef CSD_HAVE_GPU
            p.landing.reset();
#endif
            p.store.reset();
            p.closed = true;
            py::gil_scoped_release r;
            p.dev.reset();
        })
        .def_property_readonly("closed", [](PyDevice &p) { return p.closed; })
        .def_property_readonly("transport", [](PyDevice &p) { return std::string(p.d().transport().name()); })
        .def_property_readonly("front_end", [](PyDevice &p) { return std::string(front_end_name(p.d().front_end())); })
        .def_property_readonly("speaks", [](PyDevice &p) { return std::string(p.d().speaks()); })
        .def_property_readonly("where", [](PyDevice &p) { return std::string(where_name(p.d().where())); })
        .def("capabilities", [](PyDevice &p) {
            const Capabilities &c = p.d().caps();
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
            const NamespaceInfo n = p.d().ns();
            py::dict d;
            d["nsid"] = n.nsid;
            d["lba_size"] = n.lba_size;
            d["lba_count"] = n.lba_count;
            return d;
        })
        .def("statistics", [](PyDevice &p) { return statistics_dict(p.d()); })
        .def("bus", [](PyDevice &p) {
            const BusCounters b = p.d().bus();
            return py::make_tuple(b.commands, b.bytes_to_device, b.bytes_from_device);
        })
        .def("slm_alloc", [](std::shared_ptr<PyDevice> p, uint64_t size, uint64_t align) {
            auto s = std::make_shared<PySlm>();
            s->owner = p;
            s->buf = p->d().slm().alloc(size, align);
            return s;
        }, py::arg("size"), py::arg("align") = 4096)
        .def("slm_write", [](PyDevice &p, uint64_t off, const py::buffer &b) {
            InBuf in(b);
            py::gil_scoped_release r;
            p.d().slm_write(off, in.ptr(), in.size());
        })
        .def("slm_read_into", [](PyDevice &p, uint64_t off, const py::buffer &b) {
            OutBuf out(b);
            py::gil_scoped_release r;
            p.d().slm_read(off, out.ptr(), out.size());
        })
        .def("slm_load", [](PyDevice &p, uint64_t slba, uint64_t nlb, uint64_t off) {
            py::gil_scoped_release r;
            p.d().slm_load(slba, nlb, off);
        })
        .def("slm_store", [](PyDevice &p, uint64_t slba, uint64_t nlb, uint64_t off) {
            py::gil_scoped_release r;
            p.d().slm_store(slba, nlb, off);
        })
        .def("execute", [](PyDevice &p, uint16_t program, const std::vector<std::pair<uint64_t, uint64_t>> &ranges,
                           const py::bytes &params) {
            std::vector<Range> rr;
            for (auto &[o, l] : ranges) rr.push_back({o, l});
            std::string ps = params;
            ExecResult x;
            {
                py::gil_scoped_release r;
                x = p.d().execute(program, rr, ps.data(), static_cast<uint32_t>(ps.size()));
            }
            return py::make_tuple(x.dw0, x.dw1);
        })
        .def("program_load", [](PyDevice &p, const py::bytes &image, uint32_t record_size, uint16_t slot) {
            std::string img = image;
            py::gil_scoped_release r;
            return p.d().program_load(img.data(), static_cast<uint32_t>(img.size()), record_size, slot);
        })
        .def("program_unload", [](PyDevice &p, uint16_t slot) {
            py::gil_scoped_release r;
            p.d().program_unload(slot);
        })
        .def("slm_host_view", [](PyDevice &p, uint64_t off, uint64_t len) -> py::object {
            uint8_t *base = p.d().slm_host_pointer();
            if (!base) return py::none();
            if (off > p.d().caps().slm_size || len > p.d().caps().slm_size - off) throw Error("SLM view", ERANGE);
            return py::memoryview::from_memory(base + off, static_cast<ssize_t>(len), false);
        })
        // object store
        .def("store_format", [](PyDevice &p) {
            p.store.reset();
            py::gil_scoped_release r;
            ObjectStore::format(p.d());
        })
        .def("store_put", [](PyDevice &p, const std::string &name, const py::buffer &b, const std::string &dtype,
                             const std::vector<uint64_t> &shape, py::object progress) {
            InBuf in(b);
            ObjectStore &s = p.s();
            PyProgress pr(std::move(progress));
            {
                py::gil_scoped_release r;
                s.put(name, in.ptr(), in.size(), dtype, shape, pr.callback());
            }
            pr.rethrow();
        }, py::arg("name"), py::arg("data"), py::arg("dtype"), py::arg("shape"), py::arg("progress") = py::none(),
           "stores an object; progress(done, total) is called as its bytes are written")
        .def("store_read_into", [](PyDevice &p, const std::string &name, uint64_t off, const py::buffer &b) {
            OutBuf out(b);
            ObjectStore &s = p.s();
            py::gil_scoped_release r;
            s.read(name, off, out.size(), out.ptr());
        })
        // The whole object into a buffer, CRC-checked; the generation of the version that landed.
        .def("store_get_into", [](PyDevice &p, const std::string &name, const py::buffer &b, py::object progress) {
            OutBuf out(b);
            ObjectStore &s = p.s();
            PyProgress pr(std::move(progress));
            uint64_t generation;
            {
                py::gil_scoped_release r;
                MemorySink sink(out.ptr(), out.size());
                generation = s.get_into(name, sink, pr.callback()).generation;
            }
            pr.rethrow();
            return generation;
        }, py::arg("name"), py::arg("out"), py::arg("progress") = py::none(),
           "reads a whole object into out, checked; progress(done, total) as its bytes land")
        .def("store_stat", [](PyDevice &p, const std::string &name) { return object_info(p.s().stat(name)); })
        .def("store_list", [](PyDevice &p) {
            py::list l;
            for (const auto &o : p.s().list()) l.append(object_info(o));
            return l;
        })
        .def("store_remove", [](PyDevice &p, const std::string &name) {
            ObjectStore &s = p.s();
            py::gil_scoped_release r;
            s.remove(name);
        })
        .def("store_exists", [](PyDevice &p, const std::string &name) { return p.s().exists(name); })
        .def("store_generation", [](PyDevice &p) { return p.s().generation(); })
        .def("store_reclaim", [](PyDevice &p, uint64_t max_age) {
            ObjectStore &s = p.s();
            py::gil_scoped_release r;
            return s.reclaim(max_age);
        })
        .def("store_reservations", [](PyDevice &p) {
            py::list l;
            for (const auto &x : p.s().reservations()) l.append(reservation_info(x));
            return l;
        })
        .def("store_load", [](std::shared_ptr<PyDevice> p, const std::string &name) {
            auto s = std::make_shared<PySlm>();
            s->owner = p;
            ObjectStore &st = p->s();
            py::gil_scoped_release r;
            s->buf = st.load(name);
            return s;
        })
        .def("store_filter", [](PyDevice &p, const std::string &src, const std::string &dst, uint32_t record_size,
                                uint32_t field_offset, uint16_t field_type, uint16_t op, double lo, double hi,
                                int64_t lo_int, int64_t hi_int, bool indices) {
            const FilterSpec s = filter_spec(record_size, field_offset, field_type, op, lo, hi, lo_int, hi_int, indices);
            ObjectStore &st = p.s();
            FilterResult r;
            {
                py::gil_scoped_release g;
                r = st.filter(src, s, dst);
            }
            return py::make_tuple(r.matches, r.bytes);
        });

    // several drives as one (csd::DriveSet, docs/drive-set.md)
    py::class_<DriveSet>(m, "DriveSet")
        .def(py::init([](const std::vector<std::string> &paths, bool uring, const std::string &front_end) {
                 OpenOptions o;
                 o.use_uring = uring;
                 o.front_end = parse_front_end(front_end);
                 py::gil_scoped_release r;
                 return DriveSet::open(paths, o);
             }),
             py::arg("paths"), py::arg("uring") = false, py::arg("front_end") = "auto")
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
        .def("format", [](DriveSet &d) {
            py::gil_scoped_release r;
            d.format();
        })
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
        gpu::CopyReport r;
        {
            py::gil_scoped_release g;
            r = p.land().slm_to_gpu(off, len, reinterpret_cast<void *>(dst), reinterpret_cast<cudaStream_t>(stream), direct).get();
        }
        return report(r);
    });
    // (path, bytes, seconds, generation of the version that landed)
    m.def("gpu_object_to_gpu", [](PyDevice &p, const std::string &name, uintptr_t dst, uint64_t dst_bytes, uintptr_t stream) {
        ObjectStore &s = p.s();
        gpu::CopyReport r;
        {
            py::gil_scoped_release g;
            r = p.land().object_to_gpu(s, name, reinterpret_cast<void *>(dst), dst_bytes, reinterpret_cast<cudaStream_t>(stream)).get();
        }
        return py::make_tuple(r.path, r.bytes, r.seconds, r.object.generation);
    });
    m.def("gpu_configure", [](PyDevice &p, uint64_t chunk, int buffers, int readers) {  // a new pipeline
        std::lock_guard<std::mutex> g(p.init_mu);
        p.landing.reset();
        p.landing = std::make_unique<gpu::Landing>(p.d(), chunk, buffers, readers);
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

    bind_programs(m);
}
