// SPDX-License-Identifier: MIT
// programs.cc - typed calls: parameter structs in, Execute, results out.
#include "csd/programs.hpp"

#include <algorithm>
#include <cstring>

namespace csd::programs {

namespace {

template <class P>
ExecResult exec(Device &d, uint16_t id, const std::vector<Range> &r, const P &p)
{
    return d.execute(id, r, &p, sizeof p);
}

csd_filter_params filter_params(const FilterSpec &s)
{
    csd_filter_params p{};
    p.record_size = s.record_size;
    p.count = s.count;
    p.field_offset = s.field_offset;
    p.field_type = static_cast<uint16_t>(s.field_type);
    p.op = static_cast<uint16_t>(s.op);
    p.output_mode = s.indices ? CSD_FILTER_INDICES : CSD_FILTER_RECORDS;
    p.reserved = s.indices ? s.index_base : 0;
    if (s.field_type == FieldType::f32 || s.field_type == FieldType::f64) {
        std::memcpy(p.lo, &s.lo, 8);
        std::memcpy(p.hi, &s.hi, 8);
    } else {
        std::memcpy(p.lo, &s.lo_int, 8);
        std::memcpy(p.hi, &s.hi_int, 8);
    }
    return p;
}

}  // namespace

uint32_t copy(Device &d, Range src, Range dst) { return d.execute(CSD_PROG_COPY, {src, dst}).dw0; }

void gemm(Device &d, Range a, Range b, Range c, uint32_t m, uint32_t n, uint32_t k, bool ta, bool tb, float alpha,
          float beta)
{
    gemm_async(d, a, b, c, m, n, k, ta, tb, alpha, beta).get();
}

std::future<ExecResult> gemm_async(Device &d, Range a, Range b, Range c, uint32_t m, uint32_t n, uint32_t k, bool ta,
                                   bool tb, float alpha, float beta)
{
    csd_gemm_params p{m, n, k, (ta ? CSD_GEMM_TRANS_A : 0u) | (tb ? CSD_GEMM_TRANS_B : 0u), alpha, beta};
    return d.execute_async(CSD_PROG_GEMM, {a, b, c}, &p, sizeof p);
}

void gemm_depth_piece(Device &d, Range a, Range b, Range c, uint32_t m, uint32_t n, uint32_t k, uint32_t k_total,
                      uint32_t k_first, float alpha, float beta)
{
    csd_gemm_tile_params p{{m, n, k, 0, alpha, beta}, k_total, k_first};
    exec(d, CSD_PROG_GEMM, {a, b, c}, p);
}

void elementwise(Device &d, EwOp op, Range x, Range y, Range out, uint32_t count)
{
    csd_elementwise_params p{static_cast<uint32_t>(op), count, 0, 0};
    exec(d, CSD_PROG_ELEMENTWISE, {x, y, out}, p);
}

void elementwise(Device &d, EwOp op, Range x, Range out, uint32_t count, float a, float b)
{
    csd_elementwise_params p{static_cast<uint32_t>(op), count, a, b};
    exec(d, CSD_PROG_ELEMENTWISE, {x, out}, p);
}

void softmax(Device &d, Range x, Range out, uint32_t rows, uint32_t cols)
{
    csd_softmax_params p{rows, cols};
    exec(d, CSD_PROG_SOFTMAX, {x, out}, p);
}

void reduce(Device &d, ReduceOp op, DType dtype, Range x, Range out, uint32_t rows, uint32_t cols)
{
    csd_reduce_params p{static_cast<uint32_t>(op), static_cast<uint32_t>(dtype), rows, cols};
    exec(d, CSD_PROG_REDUCE, {x, out}, p);
}

void reduce_sum_from(Device &d, DType dtype, Range x, Range out, uint32_t rows, uint32_t cols, double sum0)
{
    csd_reduce_carry_params p{{CSD_RED_SUM, static_cast<uint32_t>(dtype), rows, cols}, sum0};
    exec(d, CSD_PROG_REDUCE, {x, out}, p);
}

FilterResult filter(Device &d, Range records, Range out, const FilterSpec &spec)
{
    const ExecResult r = exec(d, CSD_PROG_FILTER, {records, out}, filter_params(spec));
    return {r.dw0, r.dw1};
}

FilterResult filter(Device &d, Range records, SlmBuffer &out, const FilterSpec &spec)
{
    for (int attempt = 0;; attempt++) {
        try {
            return filter(d, records, range(out), spec);
        } catch (const Error &e) {
            if (e.code() != CSD_STATUS_OUTPUT_OVERFLOW || attempt > 0) {
                throw;
            }
            // DW0 says how many bytes the output needs; DW1 how many records matched.
            const uint64_t need = std::max<uint64_t>(e.dw0(), 4);
            out.reset();
            out = d.slm().alloc(need);
        }
    }
}

uint32_t convert(Device &d, ConvertOp op, Range in, Range out, uint32_t count, float scale, int32_t zero_point)
{
    csd_convert_params p{static_cast<uint32_t>(op), count, scale, zero_point};
    return exec(d, CSD_PROG_CONVERT, {in, out}, p).dw0;
}

uint64_t checksum(Device &d, ChecksumAlgo algo, Range data)
{
    const uint32_t a = static_cast<uint32_t>(algo);
    const ExecResult r = exec(d, CSD_PROG_CHECKSUM, {data}, a);
    return static_cast<uint64_t>(r.dw1) << 32 | r.dw0;
}

void conv2d(Device &d, Range input, Range weight, Range bias, Range output, const csd_conv2d_params &p)
{
    exec(d, CSD_PROG_CONV2D, {input, weight, bias, output}, p);
}

uint32_t decompress(Device &d, Codec codec, Range in, Range out)
{
    const uint32_t a = static_cast<uint32_t>(codec);
    return exec(d, CSD_PROG_DECOMPRESS, {in, out}, a).dw0;
}

std::vector<float> gemm(Device &d, const std::vector<float> &a, const std::vector<float> &b, uint32_t m, uint32_t n,
                        uint32_t k)
{
    if (a.size() != uint64_t{m} * k || b.size() != uint64_t{k} * n) {
        throw Error("gemm: A must hold m*k and B k*n floats", EINVAL);
    }
    SlmBuffer sa = d.slm().alloc(a.size() * 4), sb = d.slm().alloc(b.size() * 4), sc = d.slm().alloc(uint64_t{m} * n * 4);
    d.slm_write(sa.offset(), a.data(), a.size() * 4);
    d.slm_write(sb.offset(), b.data(), b.size() * 4);
    gemm(d, range(sa), range(sb), range(sc), m, n, k);
    std::vector<float> c(uint64_t{m} * n);
    d.slm_read(sc.offset(), c.data(), c.size() * 4);
    return c;
}

uint64_t checksum(Device &d, ChecksumAlgo algo, const void *data, uint64_t len)
{
    SlmBuffer s = d.slm().alloc(std::max<uint64_t>(len, 4));
    d.slm_write(s.offset(), data, len);
    return checksum(d, algo, range(s, len));
}

uint64_t gather(Device &d, Range entries, uint32_t count, Range out)
{
    const csd_gather_params p{count, 0};
    const ExecResult r = exec(d, CSD_PROG_GATHER, {entries, out}, p);
    return r.dw0 | static_cast<uint64_t>(r.dw1) << 32;
}

void embedding_bag(Device &d, const EmbeddingBagSpec &s, Range indices, Range offsets, Range weights, Range out)
{
    const csd_embedding_bag_params p{s.table_lba, s.num_rows, s.row_dim, static_cast<uint32_t>(s.dtype),
                                     static_cast<uint32_t>(s.mode), s.index_i32 ? CSD_EMB_I32 : CSD_EMB_I64, s.num_bags,
                                     s.include_last_offset ? CSD_EMB_INCLUDE_LAST_OFFSET : 0u};
    exec(d, CSD_PROG_EMBEDDING_BAG, {indices, offsets, weights, out}, p);
}

std::vector<uint8_t> gather(Device &d, const std::vector<csd_gather_entry> &entries)
{
    uint64_t total = 0;
    for (const auto &e : entries) total += e.length;
    const uint64_t in_len = entries.size() * sizeof(csd_gather_entry);
    SlmBuffer in = d.slm().alloc(std::max<uint64_t>(in_len, 16));
    SlmBuffer out = d.slm().alloc(std::max<uint64_t>(total, 16));
    if (in_len) d.slm_write(in.offset(), entries.data(), in_len);
    const uint64_t n = gather(d, range(in, std::max<uint64_t>(in_len, 1)), static_cast<uint32_t>(entries.size()),
                              range(out, std::max<uint64_t>(total, 1)));
    std::vector<uint8_t> bytes(n);
    if (n) d.slm_read(out.offset(), bytes.data(), n);
    return bytes;
}

std::vector<uint8_t> embedding_bag(Device &d, const EmbeddingBagSpec &spec, const std::vector<int64_t> &indices,
                                   const std::vector<int64_t> &offsets, const std::vector<uint8_t> &weights)
{
    EmbeddingBagSpec s = spec;
    s.index_i32 = false;
    const uint64_t esz = s.dtype == EmbDType::f32 ? 4 : 2;
    const uint64_t out_len = uint64_t{s.num_bags} * s.row_dim * esz;
    const uint64_t idx_len = indices.size() * 8, off_len = offsets.size() * 8;
    // one SLM buffer: indices (at least one element's room), offsets, weights, out
    auto up = [](uint64_t n) { return (std::max<uint64_t>(n, 8) + 63) & ~uint64_t{63}; };
    SlmBuffer b = d.slm().alloc(up(idx_len) + up(off_len) + up(weights.size()) + up(out_len));
    const uint64_t o_idx = b.offset(), o_off = o_idx + up(idx_len), o_w = o_off + up(off_len), o_out = o_w + up(weights.size());
    if (idx_len) d.slm_write(o_idx, indices.data(), idx_len);
    if (off_len) d.slm_write(o_off, offsets.data(), off_len);
    if (!weights.empty()) d.slm_write(o_w, weights.data(), weights.size());
    // an empty range must still lie in SLM: zero indices give zero length (all bags empty)
    embedding_bag(d, s, {o_idx, idx_len}, {o_off, std::max<uint64_t>(off_len, 8)}, {o_w, weights.size()},
                  {o_out, std::max<uint64_t>(out_len, 1)});
    std::vector<uint8_t> out(out_len);
    if (out_len) d.slm_read(o_out, out.data(), out_len);
    return out;
}

}  // namespace csd::programs
