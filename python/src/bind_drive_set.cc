// SPDX-License-Identifier: MIT
// bind_drive_set.cc - nvme_csd._core.DriveSet: several drives as one (csd::DriveSet,
// docs/drive-set.md).
#include "bindings.hpp"

namespace pycsd {

void bind_drive_set(py::module_ &m)
{
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
        .def("model_clock_ns", [](DriveSet &s, size_t i) { return s.drive(i).model_clock_ns(); },
             "drive i's timing-model clock in ns (Device::model_clock_ns)")
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
}

}  // namespace pycsd
