// SPDX-License-Identifier: MIT
// embedding_bag (0Ch, 1.2): torch.nn.functional.embedding_bag over a table of rows stored
// on the NVM namespace from table_lba. The plan checks every index (< num_rows) and reads
// the blocks that hold the distinct rows; the run pools each bag (sum, mean, max; per-sample
// weights with sum) accumulating in f32, an empty bag giving zeros. DW0 = bytes written.
#include <algorithm>
#include <cmath>

#include "../program.h"

namespace csd::core {

namespace {

enum { kIndices, kOffsets, kWeights, kOut, kRanges };

uint32_t elem_size(uint32_t dtype) { return dtype == CSD_EMB_F32 ? 4 : 2; }

float load(const uint8_t *p, uint32_t dtype)
{
    if (dtype == CSD_EMB_F32) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return dtype == CSD_EMB_F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

void store(uint8_t *p, float f, uint32_t dtype)
{
    if (dtype == CSD_EMB_F32) {
        std::memcpy(p, &f, 4);
        return;
    }
    const uint16_t h = dtype == CSD_EMB_F16 ? f32_to_f16(f) : f32_to_bf16(f);
    std::memcpy(p, &h, 2);
}

// The i-th index or offset (i64 or i32) as a signed value.
int64_t index_at(const Span &s, uint64_t i, uint32_t type)
{
    if (type == CSD_EMB_I64) {
        int64_t v;
        std::memcpy(&v, s.data + i * 8, 8);
        return v;
    }
    int32_t v;
    std::memcpy(&v, s.data + i * 4, 4);
    return v;
}

// What the checks found: the indices and offsets to use, the row and output sizes.
struct Shape {
    csd_embedding_bag_params p;
    uint64_t n_indices, n_offsets, row_bytes, out_bytes;
};

// The checks of the parameters and ranges, before anything is read (Invalid Parameters).
bool shape_of(const ProgramCall &call, Shape *s)
{
    csd_embedding_bag_params &p = s->p;
    if (call.nr_ranges != kRanges || !read_params(call, &p)) return false;
    if (p.row_dim == 0 || p.dtype > CSD_EMB_BF16 || p.mode > CSD_EMB_MAX || p.index_type > CSD_EMB_I32 ||
        (p.flags & ~CSD_EMB_INCLUDE_LAST_OFFSET) || p.num_rows == 0) {
        return false;
    }
    const uint32_t isz = p.index_type == CSD_EMB_I64 ? 8 : 4;
    if (call.ranges[kIndices].len % isz) return false;
    s->n_indices = call.ranges[kIndices].len / isz;
    s->n_offsets = uint64_t{p.num_bags} + ((p.flags & CSD_EMB_INCLUDE_LAST_OFFSET) ? 1 : 0);
    if (bytes_of(s->n_offsets, isz) > call.ranges[kOffsets].len) return false;
    const uint32_t esz = elem_size(p.dtype);
    s->row_bytes = uint64_t{p.row_dim} * esz;
    s->out_bytes = bytes_of(p.num_bags, s->row_bytes);
    if (s->out_bytes > UINT32_MAX) return false;  // DW0 cannot say the bytes written
    // per-sample weights (the table's dtype), only with sum, exactly one per index
    if (call.ranges[kWeights].len) {
        if (p.mode != CSD_EMB_SUM || bytes_of(s->n_indices, esz) != call.ranges[kWeights].len) return false;
    }
    return true;
}

}  // namespace

ExecResult check_embedding_bag(const ProgramCall &call, ProgramWork *work)
{
    Shape s;
    if (!shape_of(call, &s)) return fail(CSD_STATUS_INVALID_PARAMETERS);
    if (work) work->flops = static_cast<double>(s.n_indices) * s.p.row_dim * 2;
    return ok();
}

uint16_t plan_embedding_bag(const ProgramCall &call, MediaPlan *plan)
{
    Shape s;
    if (!shape_of(call, &s)) return CSD_STATUS_INVALID_PARAMETERS | CSD_STATUS_DNR;
    const csd_embedding_bag_params &p = s.p;
    // the whole table inside the namespace
    const uint64_t bs = plan->ns.lba_size, ns_bytes = plan->ns.lba_count * bs;
    const uint64_t table_bytes = bytes_of(p.num_rows, s.row_bytes);
    if (p.table_lba >= plan->ns.lba_count || table_bytes > ns_bytes - p.table_lba * bs) {
        return CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR;
    }
    plan->indices.resize(s.n_indices);
    for (uint64_t i = 0; i < s.n_indices; i++) {
        const int64_t v = index_at(call.ranges[kIndices], i, p.index_type);
        if (v < 0 || static_cast<uint64_t>(v) >= p.num_rows) return CSD_STATUS_INVALID_PARAMETERS | CSD_STATUS_DNR;
        plan->indices[i] = static_cast<uint64_t>(v);
    }
    std::vector<uint64_t> rows(plan->indices);
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    const uint64_t base = p.table_lba * bs;
    for (uint64_t r : rows) {
        const uint64_t start = base + r * s.row_bytes;
        plan->want(start / bs, (start + s.row_bytes - 1) / bs);
    }
    return CSD_STATUS_SUCCESS;
}

ExecResult run_embedding_bag(const ProgramCall &call, const MediaPlan &plan)
{
    Shape s;
    if (!shape_of(call, &s)) return fail(CSD_STATUS_INVALID_PARAMETERS);
    const csd_embedding_bag_params &p = s.p;
    const uint64_t n = plan.indices.size();
    if (n != s.n_indices) return fail(CSD_STATUS_INVALID_PARAMETERS);  // the ranges are the plan's
    const Span &out = call.ranges[kOut];
    if (s.out_bytes > out.len) {
        return fail(CSD_STATUS_OUTPUT_OVERFLOW, 0, static_cast<uint32_t>(s.out_bytes));  // below 4 GiB (shape_of)
    }
    // the bags: offsets from 0, non-decreasing, at most the indices (torch's checks)
    const bool last = p.flags & CSD_EMB_INCLUDE_LAST_OFFSET;
    std::vector<uint64_t> bounds(uint64_t{p.num_bags} + 1);
    for (uint64_t b = 0; b < s.n_offsets; b++) {
        const int64_t v = index_at(call.ranges[kOffsets], b, p.index_type);
        if (v < 0 || static_cast<uint64_t>(v) > n || (b == 0 && v != 0) || (b && static_cast<uint64_t>(v) < bounds[b - 1])) {
            return fail(CSD_STATUS_INVALID_PARAMETERS);
        }
        bounds[b] = static_cast<uint64_t>(v);
    }
    if (!last) bounds[p.num_bags] = n;
    const uint32_t esz = elem_size(p.dtype);
    const uint64_t base = p.table_lba * plan.ns.lba_size;
    const uint8_t *weights = call.ranges[kWeights].len ? call.ranges[kWeights].data : nullptr;
    std::vector<float> acc(p.row_dim);
    CancelPoints points(call, kCancelBytes);
    for (uint32_t b = 0; b < p.num_bags; b++) {
        const uint64_t lo = bounds[b], hi = bounds[b + 1];
        if (points.next(std::max<uint64_t>(1, (hi - lo) * s.row_bytes)) == 0) return fail(CSD_STATUS_ABORT_REQUESTED);
        std::fill(acc.begin(), acc.end(), p.mode == CSD_EMB_MAX && hi > lo ? -INFINITY : 0.0f);
        for (uint64_t i = lo; i < hi; i++) {
            const uint8_t *row = plan.at(base + plan.indices[i] * s.row_bytes);
            const float w = weights ? load(weights + i * esz, p.dtype) : 1.0f;
            for (uint32_t d = 0; d < p.row_dim; d++) {
                const float v = load(row + uint64_t{d} * esz, p.dtype);
                if (p.mode == CSD_EMB_MAX) {
                    acc[d] = std::isnan(v) || v > acc[d] ? v : acc[d];
                } else {
                    acc[d] += weights ? w * v : v;
                }
            }
        }
        if (p.mode == CSD_EMB_MEAN && hi > lo) {
            for (float &a : acc) a /= static_cast<float>(hi - lo);
        }
        uint8_t *dst = out.data + b * s.row_bytes;
        for (uint32_t d = 0; d < p.row_dim; d++) store(dst + uint64_t{d} * esz, acc[d], p.dtype);
    }
    return ok(static_cast<uint32_t>(s.out_bytes), static_cast<uint32_t>(s.out_bytes >> 32));
}

}  // namespace csd::core
