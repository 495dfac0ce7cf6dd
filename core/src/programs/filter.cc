// SPDX-License-Identifier: MIT
// filter (06h): selects fixed-size records whose field compares true against lo (and hi
// for between); writes the records or their u32 indices. DW0 = bytes written, DW1 =
// matching records. Output too small: Output Overflow, DW0 = bytes needed, DW1 = matches.
#include <cmath>

#include <algorithm>

#include "../program.h"

namespace csd::core {

namespace {

// The comparison of one field, fixed at compile time: field type F read from its bytes,
// compared in B (i64, u64 or f64, the type of lo and hi). Comparisons on a NaN field are
// false except ne (IEEE), as the spec asks.
template <class F, class B, uint16_t Op>
struct Match {
    B lo, hi;
    bool operator()(const uint8_t *field) const
    {
        F f;
        std::memcpy(&f, field, sizeof(F));
        const B v = static_cast<B>(f);
        if constexpr (Op == CSD_CMP_EQ) return v == lo;
        if constexpr (Op == CSD_CMP_NE) return v != lo;
        if constexpr (Op == CSD_CMP_LT) return v < lo;
        if constexpr (Op == CSD_CMP_LE) return v <= lo;
        if constexpr (Op == CSD_CMP_GT) return v > lo;
        if constexpr (Op == CSD_CMP_GE) return v >= lo;
        return (lo <= v) & (v <= hi);  // both compared: no branch
    }
};

uint32_t field_size(uint16_t type)
{
    return (type == CSD_FT_I32 || type == CSD_FT_U32 || type == CSD_FT_F32) ? 4 : 8;
}

// What a run has produced so far: bytes of output (counted past the end when it overflows)
// and matching records.
struct Tally {
    uint64_t written = 0;
    uint32_t hits = 0;
};

// Records [i0, i1) one at a time, each match written at once (memmove: the output may
// overlap the input anywhere) while it fits: the loop for any record size and any overlap.
template <class M>
void records_one_by_one(const M &match, const csd_filter_params &p, const Span &in, const Span &out, uint32_t i0,
                        uint32_t i1, Tally &t)
{
    const uint64_t unit = p.output_mode == CSD_FILTER_RECORDS ? p.record_size : 4;
    const uint8_t *rec = in.data + uint64_t{i0} * p.record_size;
    for (uint32_t i = i0; i < i1; i++, rec += p.record_size) {
        if (!match(rec + p.field_offset)) continue;
        t.hits++;
        if (t.written + unit <= out.len) {
            if (p.output_mode == CSD_FILTER_RECORDS) {
                std::memmove(out.data + t.written, rec, p.record_size);
            } else {
                std::memcpy(out.data + t.written, &i, 4);
            }
        }
        t.written += unit;
    }
}

// Records [i0, i1) in blocks whose output fits: each block gathered into a buffer on the
// stack without a branch (every record's index, or its RS bytes, lands in the next slot;
// the slot advances on a match), then copied out in one piece; or, after a block where
// fewer than 1 in 16 or more than 15 in 16 matched, with a branch straight into the output. Only where the output does
// not start inside the input after it (writes then land on records already read, as the
// one-by-one loop's do) and the block's output fits; other blocks go one by one.
template <class M, uint32_t RS, bool Indices>
void records_in_blocks(const M &match, const csd_filter_params &p, const Span &in, const Span &out, uint32_t i0,
                       uint32_t i1, Tally &t)
{
    constexpr uint32_t kUnit = Indices ? 4 : RS;
    constexpr uint32_t kBlock = 8192 / kUnit;
    alignas(64) uint8_t buf[kBlock * kUnit];
    const uint32_t rs = RS ? RS : p.record_size;  // RS is 0 for indices (any record size)
    bool branchy = false;  // whether the last block matched fewer than 1 in 16, or more than 15
    for (uint32_t b0 = i0; b0 < i1; b0 += kBlock) {
        const uint32_t b1 = i1 - b0 < kBlock ? i1 : b0 + kBlock;
        if (t.written + uint64_t{b1 - b0} * kUnit > out.len) {
            records_one_by_one(match, p, in, out, b0, b1, t);
            continue;
        }
        // With a branch (rarely mispredicted) straight into the output; without, through buf.
        uint8_t *to = branchy ? out.data + t.written : buf;
        const uint32_t n = gather_matches<RS, Indices>(in.data + uint64_t{b0} * rs, rs, b0, b1, branchy, to,
                                                      [&](uint32_t, const uint8_t *r) { return match(r + p.field_offset); });
        if (!branchy) std::memcpy(out.data + t.written, buf, uint64_t{n} * kUnit);
        branchy = n * 16 < b1 - b0 || n * 16 > 15 * (b1 - b0);
        t.written += uint64_t{n} * kUnit;
        t.hits += n;
    }
}

using Runner = void (*)(const void *match, const csd_filter_params &, const Span &, const Span &, uint32_t, uint32_t,
                        Tally &);

template <class M, uint32_t RS, bool Indices>
void run_blocks(const void *m, const csd_filter_params &p, const Span &in, const Span &out, uint32_t i0, uint32_t i1,
                Tally &t)
{
    records_in_blocks<M, RS, Indices>(*static_cast<const M *>(m), p, in, out, i0, i1, t);
}

template <class M>
void run_one_by_one(const void *m, const csd_filter_params &p, const Span &in, const Span &out, uint32_t i0,
                    uint32_t i1, Tally &t)
{
    records_one_by_one(*static_cast<const M *>(m), p, in, out, i0, i1, t);
}

// The loop for this record size, output mode and overlap, for the comparison M.
template <class M>
Runner pick_loop(const csd_filter_params &p, bool blocks_ok)
{
    if (!blocks_ok) return run_one_by_one<M>;
    if (p.output_mode == CSD_FILTER_INDICES) return run_blocks<M, 0, true>;
    switch (p.record_size) {
    case 4: return run_blocks<M, 4, false>;
    case 8: return run_blocks<M, 8, false>;
    case 16: return run_blocks<M, 16, false>;
    case 32: return run_blocks<M, 32, false>;
    default: return run_one_by_one<M>;
    }
}

// Runs all records through the loop for field type F compared in B with operator Op;
// false if cancelled (checked every 65536 records, or every kCancelBytes of them when they
// are large).
template <class F, class B, uint16_t Op>
bool filter_all(const ProgramCall &call, const csd_filter_params &p, bool blocks_ok, Tally &t)
{
    Match<F, B, Op> m;
    std::memcpy(&m.lo, p.lo, 8);
    std::memcpy(&m.hi, p.hi, 8);
    const Runner loop = pick_loop<Match<F, B, Op>>(p, blocks_ok);
    CancelPoints points(call, std::max<uint64_t>(1, std::min<uint64_t>(0x10000, kCancelBytes / p.record_size)));
    for (uint32_t i0 = 0, piece; i0 < p.count; i0 += piece) {
        if ((piece = static_cast<uint32_t>(points.next(p.count - i0))) == 0) return false;
        loop(&m, p, call.ranges[0], call.ranges[1], i0, i0 + piece, t);
    }
    return true;
}

template <class F, class B>
bool filter_type(const ProgramCall &call, const csd_filter_params &p, bool blocks_ok, Tally &t)
{
    switch (p.op) {
    case CSD_CMP_EQ: return filter_all<F, B, CSD_CMP_EQ>(call, p, blocks_ok, t);
    case CSD_CMP_NE: return filter_all<F, B, CSD_CMP_NE>(call, p, blocks_ok, t);
    case CSD_CMP_LT: return filter_all<F, B, CSD_CMP_LT>(call, p, blocks_ok, t);
    case CSD_CMP_LE: return filter_all<F, B, CSD_CMP_LE>(call, p, blocks_ok, t);
    case CSD_CMP_GT: return filter_all<F, B, CSD_CMP_GT>(call, p, blocks_ok, t);
    case CSD_CMP_GE: return filter_all<F, B, CSD_CMP_GE>(call, p, blocks_ok, t);
    default: return filter_all<F, B, CSD_CMP_BETWEEN>(call, p, blocks_ok, t);
    }
}

}  // namespace

ExecResult check_filter(const ProgramCall &call, ProgramWork *)
{
    csd_filter_params p;
    static_assert(sizeof(csd_filter_params) == 40, "filter params are 40 bytes");
    if (call.nr_ranges != 2 || !read_params(call, &p) || p.record_size == 0 ||
        p.field_type > CSD_FT_F64 || p.op > CSD_CMP_BETWEEN || p.output_mode > CSD_FILTER_INDICES ||
        (p.reserved != 0 && p.output_mode != CSD_FILTER_INDICES) ||
        static_cast<uint64_t>(p.field_offset) + field_size(p.field_type) > p.record_size) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    // indices mode: reserved is the index of the range's first record (a piece of a larger
    // table, streamed by the host), added to every index written; they must stay below 2^32
    if (p.output_mode == CSD_FILTER_INDICES && p.count && uint64_t{p.reserved} + p.count - 1 > UINT32_MAX) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    if (call.ranges[0].len < bytes_of(p.count, p.record_size)) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    return ok();  // an output too small shows once the matches are counted
}

ExecResult program_filter(const ProgramCall &call)
{
    if (const ExecResult r = check_filter(call, nullptr); r.status) {
        return r;
    }
    csd_filter_params p;
    read_params(call, &p);
    const Span &in = call.ranges[0], &out = call.ranges[1];
    const bool blocks_ok = output_trails_input(in, out);
    Tally t;
    bool done;
    switch (p.field_type) {
    case CSD_FT_I32: done = filter_type<int32_t, int64_t>(call, p, blocks_ok, t); break;
    case CSD_FT_I64: done = filter_type<int64_t, int64_t>(call, p, blocks_ok, t); break;
    case CSD_FT_U32: done = filter_type<uint32_t, uint64_t>(call, p, blocks_ok, t); break;
    case CSD_FT_U64: done = filter_type<uint64_t, uint64_t>(call, p, blocks_ok, t); break;
    case CSD_FT_F32: done = filter_type<float, double>(call, p, blocks_ok, t); break;
    default: done = filter_type<double, double>(call, p, blocks_ok, t); break;
    }
    if (!done) {
        return fail(CSD_STATUS_ABORT_REQUESTED);
    }
    const uint64_t written = t.written;
    const uint32_t hits = t.hits;
    if (written > out.len || written > UINT32_MAX) {
        uint32_t need = written > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(written);
        return fail(CSD_STATUS_OUTPUT_OVERFLOW, need, hits);
    }
    if (p.output_mode == CSD_FILTER_INDICES && p.reserved) {  // the index base (check_filter)
        for (uint64_t at = 0; at < written; at += 4) {
            uint32_t i;
            std::memcpy(&i, out.data + at, 4);
            i += p.reserved;
            std::memcpy(out.data + at, &i, 4);
        }
    }
    return ok(static_cast<uint32_t>(written), hits);
}

}  // namespace csd::core
