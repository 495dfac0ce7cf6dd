// SPDX-License-Identifier: MIT
// filter (06h): selects fixed-size records whose field compares true against lo (and hi
// for between); writes the records or their u32 indices. DW0 = bytes written, DW1 =
// matching records. Output too small: Output Overflow, DW0 = bytes needed, DW1 = matches.
#include <cmath>

#include <algorithm>

#include "../program.h"

namespace csd::core {

namespace {

template <class T>
bool compare(T v, T lo, T hi, uint16_t op)
{
    switch (op) {
    case CSD_CMP_EQ: return v == lo;
    case CSD_CMP_NE: return v != lo;
    case CSD_CMP_LT: return v < lo;
    case CSD_CMP_LE: return v <= lo;
    case CSD_CMP_GT: return v > lo;
    case CSD_CMP_GE: return v >= lo;
    default: return lo <= v && v <= hi;
    }
}

template <class F, class B>
bool field_matches(const uint8_t *field, const uint8_t *lo, const uint8_t *hi, uint16_t op)
{
    F v;
    B l, h;
    std::memcpy(&v, field, sizeof(F));
    std::memcpy(&l, lo, 8);
    std::memcpy(&h, hi, 8);
    // Comparisons on a NaN field are false except ne (IEEE), as the spec asks.
    return compare<B>(static_cast<B>(v), l, h, op);
}

bool matches(const uint8_t *field, const csd_filter_params &p)
{
    switch (p.field_type) {
    case CSD_FT_I32: return field_matches<int32_t, int64_t>(field, p.lo, p.hi, p.op);
    case CSD_FT_I64: return field_matches<int64_t, int64_t>(field, p.lo, p.hi, p.op);
    case CSD_FT_U32: return field_matches<uint32_t, uint64_t>(field, p.lo, p.hi, p.op);
    case CSD_FT_U64: return field_matches<uint64_t, uint64_t>(field, p.lo, p.hi, p.op);
    case CSD_FT_F32: return field_matches<float, double>(field, p.lo, p.hi, p.op);
    default: return field_matches<double, double>(field, p.lo, p.hi, p.op);
    }
}

uint32_t field_size(uint16_t type)
{
    return (type == CSD_FT_I32 || type == CSD_FT_U32 || type == CSD_FT_F32) ? 4 : 8;
}

}  // namespace

ExecResult check_filter(const ProgramCall &call, ProgramWork *)
{
    csd_filter_params p;
    static_assert(sizeof(csd_filter_params) == 40, "filter params are 40 bytes");
    if (call.nr_ranges != 2 || !read_params(call, &p) || p.record_size == 0 ||
        p.field_type > CSD_FT_F64 || p.op > CSD_CMP_BETWEEN || p.output_mode > CSD_FILTER_INDICES ||
        p.reserved != 0 || static_cast<uint64_t>(p.field_offset) + field_size(p.field_type) > p.record_size) {
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
    const uint64_t out_unit = p.output_mode == CSD_FILTER_RECORDS ? p.record_size : 4;
    uint64_t written = 0;
    uint32_t hits = 0;
    // Checked every 65536 records, or every kCancelBytes of them when they are large.
    CancelPoints points(call, std::max<uint64_t>(1, std::min<uint64_t>(0x10000, kCancelBytes / p.record_size)));
    for (uint32_t i0 = 0, piece; i0 < p.count; i0 += piece) {
        if ((piece = static_cast<uint32_t>(points.next(p.count - i0))) == 0) {
            return fail(CSD_STATUS_ABORT_REQUESTED);
        }
        for (uint32_t i = i0; i < i0 + piece; i++) {
            const uint8_t *rec = in.data + static_cast<uint64_t>(i) * p.record_size;
            if (!matches(rec + p.field_offset, p)) {
                continue;
            }
            hits++;
            if (written + out_unit <= out.len) {
                if (p.output_mode == CSD_FILTER_RECORDS) {
                    std::memmove(out.data + written, rec, p.record_size);
                } else {
                    std::memcpy(out.data + written, &i, 4);
                }
            }
            written += out_unit;
        }
    }
    if (written > out.len || written > UINT32_MAX) {
        uint32_t need = written > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(written);
        return fail(CSD_STATUS_OUTPUT_OVERFLOW, need, hits);
    }
    return ok(static_cast<uint32_t>(written), hits);
}

}  // namespace csd::core
