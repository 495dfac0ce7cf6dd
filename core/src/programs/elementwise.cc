// SPDX-License-Identifier: MIT
// elementwise (03h): binary x op y or unary op x over f32, in place allowed; DW0 = count*4.
#include <algorithm>
#include <cmath>

#include "../program.h"

namespace csd::core {

namespace {

bool is_binary(uint32_t op) { return op <= CSD_EW_MIN; }
bool is_unary(uint32_t op) { return op >= CSD_EW_RELU && op <= CSD_EW_ABS; }

// x op y for the binary operator Op.
template <uint32_t Op>
float binary(float x, float y)
{
    if constexpr (Op == CSD_EW_ADD) return x + y;
    if constexpr (Op == CSD_EW_SUB) return x - y;
    if constexpr (Op == CSD_EW_MUL) return x * y;
    if constexpr (Op == CSD_EW_DIV) return x / y;
    if constexpr (Op == CSD_EW_MAX) return std::fmax(x, y);
    return std::fmin(x, y);
}

constexpr size_t kChunk = kCancelBytes / sizeof(float);  // elements between cancellation checks

// out[i] = f(x[i]); false if cancelled.
template <class F>
bool apply_unary(const ProgramCall &call, const float *x, float *out, size_t n, F f)
{
    for (size_t c0 = 0; c0 < n; c0 += kChunk) {
        if (cancelled(call)) return false;
        const size_t end = std::min(n, c0 + kChunk);
        for (size_t i = c0; i < end; i++) {
            out[i] = f(x[i]);
        }
    }
    return true;
}

// out[i] = x[i] Op y[i]; false if cancelled.
template <uint32_t Op>
bool apply_binary(const ProgramCall &call, const float *x, const float *y, float *out, size_t n)
{
    for (size_t c0 = 0; c0 < n; c0 += kChunk) {
        if (cancelled(call)) return false;
        const size_t end = std::min(n, c0 + kChunk);
        for (size_t i = c0; i < end; i++) {
            out[i] = binary<Op>(x[i], y[i]);
        }
    }
    return true;
}

}  // namespace

ExecResult check_elementwise(const ProgramCall &call, ProgramWork *)
{
    csd_elementwise_params p;
    if (!read_params(call, &p) || p.count == 0 || (!is_binary(p.op) && !is_unary(p.op)) ||
        call.nr_ranges != (is_binary(p.op) ? 3u : 2u)) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    const uint64_t bytes = bytes_of(p.count, 4);
    for (uint32_t i = 0; i + 1 < call.nr_ranges; i++) {
        if (call.ranges[i].len < bytes) {
            return fail(CSD_STATUS_INVALID_PARAMETERS);
        }
    }
    if (call.ranges[call.nr_ranges - 1].len < bytes) {
        return fail(CSD_STATUS_OUTPUT_OVERFLOW);
    }
    return ok();
}

ExecResult program_elementwise(const ProgramCall &call)
{
    if (const ExecResult r = check_elementwise(call, nullptr); r.status) {
        return r;
    }
    csd_elementwise_params p;
    read_params(call, &p);
    const uint64_t bytes = bytes_of(p.count, 4);
    const Span &out = call.ranges[call.nr_ranges - 1];
    const size_t n = p.count;
    InView<float> x(call.ranges[0], n);
    OutView<float> o(out, n);
    float *dst = o.get();
    bool done = true;
    if (is_binary(p.op)) {
        InView<float> y(call.ranges[1], n);
        const float *a = x.get(), *b = y.get();
        switch (p.op) {
        case CSD_EW_ADD: done = apply_binary<CSD_EW_ADD>(call, a, b, dst, n); break;
        case CSD_EW_SUB: done = apply_binary<CSD_EW_SUB>(call, a, b, dst, n); break;
        case CSD_EW_MUL: done = apply_binary<CSD_EW_MUL>(call, a, b, dst, n); break;
        case CSD_EW_DIV: done = apply_binary<CSD_EW_DIV>(call, a, b, dst, n); break;
        case CSD_EW_MAX: done = apply_binary<CSD_EW_MAX>(call, a, b, dst, n); break;
        default: done = apply_binary<CSD_EW_MIN>(call, a, b, dst, n); break;
        }
    } else {
        const float a = p.a, b = p.b;
        const float *in = x.get();
        switch (p.op) {
        case CSD_EW_RELU: done = apply_unary(call, in, dst, n, [](float v) { return v > 0.0f ? v : 0.0f; }); break;
        case CSD_EW_SIGMOID:
            done = apply_unary(call, in, dst, n, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
            break;
        case CSD_EW_TANH: done = apply_unary(call, in, dst, n, [](float v) { return std::tanh(v); }); break;
        case CSD_EW_GELU:
            done = apply_unary(call, in, dst, n, [](float v) {
                return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
            });
            break;
        case CSD_EW_AXPB: done = apply_unary(call, in, dst, n, [a, b](float v) { return a * v + b; }); break;
        case CSD_EW_EXP: done = apply_unary(call, in, dst, n, [](float v) { return std::exp(v); }); break;
        default: done = apply_unary(call, in, dst, n, [](float v) { return std::fabs(v); }); break;
        }
    }
    if (!done) {
        return fail(CSD_STATUS_ABORT_REQUESTED);
    }
    o.commit();
    return ok(static_cast<uint32_t>(bytes));
}

}  // namespace csd::core
