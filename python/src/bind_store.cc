// SPDX-License-Identifier: MIT
// bind_store.cc - nvme_csd._core.Device's object-store calls (csd::ObjectStore: format, put,
// get, stat, list, reservations; programs over objects of any size, streamed) and the dicts
// they answer with.
#include <optional>

#include "csd/npy.hpp"
#include "csd/program.hpp"
#include "csd/store_io.hpp"

#include "bindings.hpp"

namespace pycsd {
namespace {

// StreamOptions of a Python call: its SLM budget (0: all that is free) and progress.
StreamOptions stream_options(uint64_t slm_budget, PyProgress &pr)
{
    StreamOptions o;
    o.slm_budget = slm_budget;
    o.progress = pr.callback();
    return o;
}

}  // namespace

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

void bind_device_store(PyDeviceClass &cls)
{
    cls
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
            src.interrupted = [&pr] { pr.check_signals(); };
            pr.run([&] { s->put(name, src, dtype, shape, pr.callback()); });
        }, py::arg("name"), py::arg("fd"), py::arg("size"), py::arg("dtype"), py::arg("shape"),
           py::arg("progress") = py::none(),
           "streams an object from a file descriptor (size < 0: a regular file's rest, else until its end)")
        .def("store_put_reader", [](PyDevice &p, const std::string &name, py::object read, int64_t size,
                                    const std::string &dtype, const std::vector<uint64_t> &shape, py::object progress) {
            const Use u(p);
            const auto s = u.store();
            PyProgress pr(std::move(progress));
            // read(n) -> bytes-like (b"" at the end), as a file object's read (raw files and
            // sockets' readers give bytes; io.BytesIO's getbuffer, readinto-style wrappers and
            // numpy give bytearray or memoryview: any C-contiguous buffer)
            struct Reader : ObjectSource {
                PyProgress &pr;
                py::object &fn;
                uint64_t n;
                Reader(PyProgress &p, py::object &f, uint64_t size) : pr(p), fn(f), n(size) {}
                uint64_t size() const override { return n; }
                uint64_t read(uint8_t *buf, uint64_t want) override
                {
                    return pr.call("read", [&]() -> uint64_t {
                        const py::object got = fn(want);
                        Py_buffer view;
                        if (got.is_none() || PyObject_GetBuffer(got.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) {
                            PyErr_Clear();
                            throw Error("read(n) returned " + py::type::of(got).attr("__name__").cast<std::string>() +
                                            ", not bytes, bytearray or a contiguous memoryview",
                                        EINVAL);
                        }
                        const uint64_t len = static_cast<uint64_t>(view.len);
                        if (len <= want) std::memcpy(buf, view.buf, len);
                        PyBuffer_Release(&view);
                        if (len > want) throw Error("read(n) gave more than n bytes", EINVAL);
                        return len;
                    });
                }
            } src(pr, read, size < 0 ? ObjectSource::kUnknownSize : uint64_t(size));
            pr.run([&] { s->put(name, src, dtype, shape, pr.callback()); });
        }, py::arg("name"), py::arg("read"), py::arg("size"), py::arg("dtype"), py::arg("shape"),
           py::arg("progress") = py::none(), "streams an object from read(n) -> bytes-like (size < 0: until empty)")
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
            sink.interrupted = [&pr] { pr.check_signals(); };
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
}

}  // namespace pycsd
