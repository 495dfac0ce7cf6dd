// SPDX-License-Identifier: MIT
// reduce (05h): one 8-byte result per row of a rows x cols matrix: sum, min, max, mean
// (f64 for float input, i64 for integer input; integer sums wrap), argmax, argmin (u64,
// first index of the extreme). min/max/argmin/argmax skip NaN unless a row is all NaN.
#include <cmath>
#include <type_traits>

#include "../program.h"

namespace csd::core {

namespace {

// The extreme (largest if want_max) of i32 x[from, n): four 16-byte vectors of running
// extremes (GCC's vector extension; compare and select, so SSE2 suffices), then the
// extreme of their lanes; integer extremes are exact in any order. Written out because GCC
// kept extreme_value's 16 lanes scalar for i32, on the stack (i32 max 0.64-0.90 of a plain
// loop, whose one vector is a chain of dependent compare-and-selects: now 1.24-1.27 of it).
// i64 stays on those scalar lanes: without SSE4.2 a 64-bit vector compare is emulated, and
// the vectors ran 0.88 of the plain loop where the scalar lanes run 1.6-1.7.
int32_t i32_extreme(const int32_t *x, uint32_t from, uint32_t n, bool want_max)
{
    typedef int32_t V __attribute__((vector_size(16)));
    constexpr uint32_t kLanes = sizeof(V) / sizeof(int32_t), kVecs = 4;
    int32_t m = x[from];
    uint32_t i = from;
    if (n - from >= kLanes * kVecs) {
        V acc[kVecs] = {};
        for (V &a : acc) a += m;
        for (; n - i >= kLanes * kVecs; i += kLanes * kVecs) {
            for (uint32_t k = 0; k < kVecs; k++) {
                V v;
                std::memcpy(&v, x + i + k * kLanes, sizeof v);
                const V take = want_max ? v > acc[k] : v < acc[k];  // all ones where v wins
                acc[k] = (v & take) | (acc[k] & ~take);
            }
        }
        for (uint32_t k = 0; k < kVecs; k++) {
            for (uint32_t j = 0; j < kLanes; j++) {
                if (want_max ? acc[k][j] > m : acc[k][j] < m) m = acc[k][j];
            }
        }
    }
    for (; i < n; i++) {
        if (want_max ? x[i] > m : x[i] < m) m = x[i];
    }
    return m;
}

// The extreme (largest if want_max) of x[from, n), x[from] being a candidate (not NaN
// unless all are): 16 independent running extremes (the compiler vectorises them for
// floating point; a NaN never wins a comparison), then the largest of them.
template <class T>
T extreme_value(const T *x, uint32_t from, uint32_t n, bool want_max)
{
    if constexpr (std::is_same_v<T, int32_t>) return i32_extreme(x, from, n, want_max);
    constexpr uint32_t kLanes = 16;
    T lane[kLanes];
    for (T &l : lane) l = x[from];
    uint32_t i = from;
    if (want_max) {
        for (; i + kLanes <= n; i += kLanes) {
            for (uint32_t j = 0; j < kLanes; j++) lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
        }
    } else {
        for (; i + kLanes <= n; i += kLanes) {
            for (uint32_t j = 0; j < kLanes; j++) lane[j] = x[i + j] < lane[j] ? x[i + j] : lane[j];
        }
    }
    T m = lane[0];
    for (uint32_t j = 1; j < kLanes; j++) {
        if (want_max ? lane[j] > m : lane[j] < m) m = lane[j];
    }
    for (; i < n; i++) {
        if (want_max ? x[i] > m : x[i] < m) m = x[i];
    }
    return m;
}

// The first index in [from, n) of the extreme (largest if want_max) of x, x[from] being a
// candidate (not NaN unless all are): one pass, 16 independent running extremes each with
// the first position it was seen at (the compiler vectorises value and position alike; a
// NaN never wins a comparison), then the lanes' extreme, the first position among equals.
template <class T>
uint32_t extreme_from(const T *x, uint32_t from, uint32_t n, bool want_max)
{
    using Idx = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;  // as wide as T: one mask for both
    constexpr uint32_t kLanes = 16;
    T lane[kLanes];
    Idx at[kLanes];
    for (uint32_t j = 0; j < kLanes; j++) lane[j] = x[from], at[j] = from;
    uint32_t i = from;
    if (want_max) {
        for (; i + kLanes <= n; i += kLanes) {
            for (uint32_t j = 0; j < kLanes; j++) {
                const bool beyond = x[i + j] > lane[j];
                lane[j] = beyond ? x[i + j] : lane[j];
                at[j] = beyond ? Idx{i + j} : at[j];
            }
        }
    } else {
        for (; i + kLanes <= n; i += kLanes) {
            for (uint32_t j = 0; j < kLanes; j++) {
                const bool beyond = x[i + j] < lane[j];
                lane[j] = beyond ? x[i + j] : lane[j];
                at[j] = beyond ? Idx{i + j} : at[j];
            }
        }
    }
    T m = lane[0];
    Idx best = at[0];
    for (uint32_t j = 1; j < kLanes; j++) {
        if ((want_max ? lane[j] > m : lane[j] < m) || (lane[j] == m && at[j] < best)) m = lane[j], best = at[j];
    }
    for (; i < n; i++) {
        if (want_max ? x[i] > m : x[i] < m) m = x[i], best = i;
    }
    return static_cast<uint32_t>(best);
}

// Calls piece_fn(from, end) for each piece of a row read between cancellation checks, its
// leading NaN skipped (a piece of NaN alone is not passed); false if cancelled.
template <class T, class F>
bool for_each_piece_past_nan(const T *x, uint32_t n, CancelPoints &points, F &&piece_fn)
{
    for (uint64_t i0 = 0, piece; i0 < n; i0 += piece) {
        if ((piece = points.next(n - i0)) == 0) return false;
        const uint32_t end = static_cast<uint32_t>(i0 + piece);
        uint32_t from = static_cast<uint32_t>(i0);
        if constexpr (std::is_floating_point_v<T>) {
            while (from < end && std::isnan(x[from])) from++;
            if (from == end) continue;
        }
        piece_fn(from, end);
    }
    return true;
}

// min or max of one row: the value argmin / argmax would point at (NaN skipped unless the
// row is all NaN; of -0 and +0 the first), found without its position unless it is a zero;
// false if cancelled.
template <class T>
bool extreme_row(const T *x, uint32_t n, bool want_max, CancelPoints &points, uint64_t *bits)
{
    bool found = false;
    T best = x[0];
    const bool whole = for_each_piece_past_nan(x, n, points, [&](uint32_t from, uint32_t end) {
        T m = extreme_value(x, from, end, want_max);
        if constexpr (std::is_floating_point_v<T>) {
            if (m == 0) m = x[extreme_from(x, from, end, want_max)];  // the first zero's sign, as argmax has it
        }
        if (!found || (want_max ? m > best : m < best)) best = m;
        found = true;
    });
    if (!whole) return false;
    if constexpr (std::is_floating_point_v<T>) {
        const double v = static_cast<double>(best);
        std::memcpy(bits, &v, 8);
    } else {
        const int64_t v = best;
        std::memcpy(bits, &v, 8);
    }
    return true;
}

// The result of one row (n elements), its elements read in pieces between cancellation
// checks (a row may be as wide as SLM); false if cancelled. The pieces change nothing: sums
// run in element order, and an extreme replaces the one found so far only if strictly
// beyond it, which keeps its first position.
template <class T>
bool reduce_row(const T *x, uint32_t n, uint32_t op, CancelPoints &points, uint64_t *bits, double sum0 = 0.0)
{
    if (op == CSD_RED_SUM || op == CSD_RED_MEAN) {
        double fs = sum0;
        uint64_t s = 0;  // two's complement wrap
        __int128 exact = 0;
        for (uint64_t i0 = 0, piece; i0 < n; i0 += piece) {
            if ((piece = points.next(n - i0)) == 0) return false;
            if constexpr (std::is_floating_point_v<T>) {
                for (uint64_t i = i0; i < i0 + piece; i++) fs += static_cast<double>(x[i]);
            } else if (op == CSD_RED_MEAN) {
                for (uint64_t i = i0; i < i0 + piece; i++) exact += x[i];
            } else {
                const T *v = x + i0;
                const uint32_t m = static_cast<uint32_t>(piece);  // a row has at most 2^32 - 1 elements
                for (uint32_t i = 0; i < m; i++) s += static_cast<uint64_t>(static_cast<int64_t>(v[i]));
            }
        }
        if constexpr (std::is_floating_point_v<T>) {
            if (op == CSD_RED_MEAN) fs /= n;
            std::memcpy(bits, &fs, 8);
        } else if (op == CSD_RED_MEAN) {
            const double m = static_cast<double>(exact) / n;
            std::memcpy(bits, &m, 8);
        } else {
            *bits = s;
        }
        return true;
    }
    // min, max, argmin, argmax: first extreme, NaN skipped where possible (a row of NaN
    // gives index 0)
    const bool want_max = op == CSD_RED_MAX || op == CSD_RED_ARGMAX;
    if (op == CSD_RED_MIN || op == CSD_RED_MAX) return extreme_row(x, n, want_max, points, bits);
    bool found = false;
    uint32_t best = 0;
    const bool whole = for_each_piece_past_nan(x, n, points, [&](uint32_t from, uint32_t end) {
        const uint32_t i = extreme_from(x, from, end, want_max);
        if (!found || (want_max ? x[i] > x[best] : x[i] < x[best])) best = i;
        found = true;
    });
    if (!whole) return false;
    if (op == CSD_RED_ARGMAX || op == CSD_RED_ARGMIN) {
        *bits = best;
    } else if constexpr (std::is_floating_point_v<T>) {
        const double v = static_cast<double>(x[best]);
        std::memcpy(bits, &v, 8);
    } else {
        const int64_t v = x[best];
        std::memcpy(bits, &v, 8);
    }
    return true;
}

// One result per row; false if cancelled (checked every kCancelBytes of input).
template <class T>
bool reduce_all(const ProgramCall &call, const Span &in, uint64_t elems, uint32_t rows, uint32_t cols, uint32_t op,
                uint64_t *out, double sum0)
{
    InView<T> x(in, elems);
    CancelPoints points(call, kCancelBytes / sizeof(T));
    for (uint64_t r = 0; r < rows; r++) {
        if (!reduce_row(x.get() + r * cols, cols, op, points, &out[r], r == 0 ? sum0 : 0.0)) return false;
    }
    return true;
}

}  // namespace

namespace {

// The parameters: csd_reduce_params, or csd_reduce_carry_params (a float sum carried on from
// an earlier piece of its first row: op sum, f32 or f64, where sum0 starts row 0's sum).
bool reduce_params(const ProgramCall &call, csd_reduce_params *p, double *sum0)
{
    *sum0 = 0.0;
    if (call.param_len == sizeof(csd_reduce_carry_params)) {
        csd_reduce_carry_params c;
        if (!read_params(call, &c) || c.base.op != CSD_RED_SUM ||
            (c.base.dtype != CSD_DT_F32 && c.base.dtype != CSD_DT_F64)) {
            return false;
        }
        *p = c.base;
        *sum0 = c.sum0;
        return true;
    }
    return read_params(call, p);
}

}  // namespace

ExecResult check_reduce(const ProgramCall &call, ProgramWork *)
{
    csd_reduce_params p;
    double sum0;
    if (call.nr_ranges != 2 || !reduce_params(call, &p, &sum0) || p.op > CSD_RED_ARGMIN ||
        p.dtype > CSD_DT_I64 || p.rows == 0 || p.cols == 0) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    const uint64_t esize = (p.dtype == CSD_DT_F32 || p.dtype == CSD_DT_I32) ? 4 : 8;
    uint64_t elems;
    if (!mul_ok(p.rows, p.cols, &elems) || call.ranges[0].len < bytes_of(elems, esize)) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    const uint64_t out_bytes = bytes_of(p.rows, 8);
    if (call.ranges[1].len < out_bytes) {
        return fail(CSD_STATUS_OUTPUT_OVERFLOW);
    }
    if (out_bytes > UINT32_MAX) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    return ok();
}

ExecResult program_reduce(const ProgramCall &call)
{
    if (const ExecResult r = check_reduce(call, nullptr); r.status) {
        return r;
    }
    csd_reduce_params p;
    double sum0;
    reduce_params(call, &p, &sum0);
    const uint64_t elems = uint64_t{p.rows} * p.cols, out_bytes = uint64_t{p.rows} * 8;  // checked: no overflow
    std::vector<uint64_t> res(p.rows);  // separate: the output may overlap the input
    bool done;
    switch (p.dtype) {
    case CSD_DT_F32: done = reduce_all<float>(call, call.ranges[0], elems, p.rows, p.cols, p.op, res.data(), sum0); break;
    case CSD_DT_F64: done = reduce_all<double>(call, call.ranges[0], elems, p.rows, p.cols, p.op, res.data(), sum0); break;
    case CSD_DT_I32: done = reduce_all<int32_t>(call, call.ranges[0], elems, p.rows, p.cols, p.op, res.data(), sum0); break;
    default: done = reduce_all<int64_t>(call, call.ranges[0], elems, p.rows, p.cols, p.op, res.data(), sum0); break;
    }
    if (!done) {
        return fail(CSD_STATUS_ABORT_REQUESTED);
    }
    std::memcpy(call.ranges[1].data, res.data(), out_bytes);
    return ok(static_cast<uint32_t>(out_bytes));
}

}  // namespace csd::core
