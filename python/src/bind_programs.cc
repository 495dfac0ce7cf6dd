// SPDX-License-Identifier: MIT
// bind_programs.cc - nvme_csd._core.programs: libcsd's typed calls of the device-defined
// programs (csd/programs.hpp).
#include <array>
#include <optional>

#include "csd/btree.hpp"
#include "csd/program.hpp"
#include "csd/programs.hpp"
#include "csd/store.hpp"

#include "bindings.hpp"

namespace pycsd {

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
                            uint64_t base_lba, uint32_t fanout, bool force) {
        const Use u(d);
        py::gil_scoped_release g;
        const BtreeLayout t = btree_write(u.d(), keys, values, base_lba, fanout, force);
        return std::make_tuple(t.root_lba, t.blocks, t.depth);
    }, "the chase example's B+-tree written from base_lba: (root_lba, blocks, depth); unless force, refused "
       "(EEXIST) over a partition table, a filesystem, a store or blocks that are no tree's",
       py::arg("dev"), py::arg("keys"), py::arg("values"), py::arg("base_lba"), py::arg("fanout"), py::arg("force") = false);
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
        if (!in.size()) return;
        ObjectStore::check_raw_write(u.d(), slba, in.size() / lba, "the table's blocks");  // not over the store's objects
        u.d().write_lbas(slba, in.size() / lba, in.ptr());
    }, "writes whole blocks of the namespace from slba (NVMe Write): where media programs' tables live; "
       "refused (EEXIST) over an object store's blocks");
    p.def("read_blocks_into", [](PyDevice &d, uint64_t slba, const py::buffer &b) {
        const Use u(d);
        OutBuf out(b);
        const uint32_t lba = u.d().ns().lba_size;
        if (out.size() % lba) throw py::value_error("a whole number of blocks is read");
        py::gil_scoped_release g;
        if (out.size()) u.d().read_lbas(slba, out.size() / lba, out.ptr());
    }, "reads whole blocks of the namespace from slba into a buffer (NVMe Read)");
}

}  // namespace pycsd
