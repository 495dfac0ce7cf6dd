// elementwise (03h): binary x op y or unary op x over f32, in place allowed; DW0 = count*4.
#include <cmath>

#include "../program.h"

namespace csd::core {

namespace {

bool is_binary(uint32_t op) { return op <= CSD_EW_MIN; }
bool is_unary(uint32_t op) { return op >= CSD_EW_RELU && op <= CSD_EW_ABS; }

float binary(uint32_t op, float x, float y)
{
    switch (op) {
    case CSD_EW_ADD: return x + y;
    case CSD_EW_SUB: return x - y;
    case CSD_EW_MUL: return x * y;
    case CSD_EW_DIV: return x / y;
    case CSD_EW_MAX: return std::fmax(x, y);
    default: return std::fmin(x, y);
    }
}

template <class F>
void apply_unary(const float *x, float *out, size_t n, F f)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = f(x[i]);
    }
}

}  // namespace

ExecResult program_elementwise(const ProgramCall &call)
{
    csd_elementwise_params p;
    if (!read_params(call, &p) || p.count == 0 || (!is_binary(p.op) && !is_unary(p.op)) ||
        call.nr_ranges != (is_binary(p.op) ? 3u : 2u)) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    const uint64_t bytes = bytes_of(p.count, 4);
    const Span &out = call.ranges[call.nr_ranges - 1];
    for (uint32_t i = 0; i + 1 < call.nr_ranges; i++) {
        if (call.ranges[i].len < bytes) {
            return fail(CSD_STATUS_INVALID_PARAMETERS);
        }
    }
    if (out.len < bytes) {
        return fail(CSD_STATUS_OUTPUT_OVERFLOW);
    }
    const size_t n = p.count;
    InView<float> x(call.ranges[0], n);
    OutView<float> o(out, n);
    float *dst = o.get();
    if (is_binary(p.op)) {
        InView<float> y(call.ranges[1], n);
        for (size_t i = 0; i < n; i++) {
            dst[i] = binary(p.op, x[i], y[i]);
        }
    } else {
        const float a = p.a, b = p.b;
        switch (p.op) {
        case CSD_EW_RELU: apply_unary(x.get(), dst, n, [](float v) { return v > 0.0f ? v : 0.0f; }); break;
        case CSD_EW_SIGMOID:
            apply_unary(x.get(), dst, n, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
            break;
        case CSD_EW_TANH: apply_unary(x.get(), dst, n, [](float v) { return std::tanh(v); }); break;
        case CSD_EW_GELU:
            apply_unary(x.get(), dst, n, [](float v) {
                return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
            });
            break;
        case CSD_EW_AXPB: apply_unary(x.get(), dst, n, [a, b](float v) { return a * v + b; }); break;
        case CSD_EW_EXP: apply_unary(x.get(), dst, n, [](float v) { return std::exp(v); }); break;
        default: apply_unary(x.get(), dst, n, [](float v) { return std::fabs(v); }); break;
        }
    }
    o.commit();
    return ok(static_cast<uint32_t>(bytes));
}

}  // namespace csd::core
