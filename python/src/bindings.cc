// SPDX-License-Identifier: MIT
// bindings.cc - nvme_csd._core: libcsd for Python (pybind11), its module; each area's classes
// and calls in a file of its own (bindings.hpp names them). Thin: the Pythonic layer
// (numpy/torch/DLPack, program wrappers, the store mapping) is nvme_csd/*.py. Every call
// that talks to the device releases the GIL, so threads overlap device work.
#include <pybind11/pybind11.h>

#include "csd/npy.hpp"
#include "csd_spec.h"
#include "nvme_cs.h"

#include "bindings.hpp"

using namespace pycsd;

namespace {

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

}  // namespace

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

    // Each area's classes and calls, in the order the module lists them (bindings.hpp).
    bind_slm(m);
    PyDeviceClass device = bind_device(m);
    bind_device_store(device);
    bind_drive_set(m);
    bind_gpu(m);
    bind_layer_loader(m);
    bind_programs(m);
}
