// SPDX-License-Identifier: MIT
// convert (07h): f32 <-> f16 / bf16 (round to nearest even), int8 / uint8 quantised
// values <-> f32 with scale and zero point. DW0 = bytes written.
#include <cmath>

#include <algorithm>
#include <limits>

#include "../program.h"

namespace csd::core {

namespace {

uint32_t f32_bits(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

float bits_f32(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

}  // namespace

// IEEE binary32 -> binary16, round to nearest even; NaN stays (quiet) NaN.
uint16_t f32_to_f16(float f)
{
    const uint32_t x = f32_bits(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
    const uint32_t exp = (x >> 23) & 0xFF;
    uint32_t man = x & 0x7FFFFF;
    if (exp == 0xFF) {
        return sign | 0x7C00 | (man ? 0x200 | (man >> 13) : 0);
    }
    const int e = static_cast<int>(exp) - 127 + 15;
    if (e >= 0x1F) {
        return sign | 0x7C00;  // overflow to infinity
    }
    if (e <= 0) {
        // subnormal half (or zero): shift the full significand into place, RNE
        if (e < -10) {
            return sign;
        }
        man |= 0x800000;
        const uint32_t shift = static_cast<uint32_t>(14 - e);
        uint32_t half = man >> shift;
        const uint32_t rem = man & ((1u << shift) - 1);
        const uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) {
            half++;
        }
        return sign | static_cast<uint16_t>(half);
    }
    uint32_t half = (static_cast<uint32_t>(e) << 10) | (man >> 13);
    const uint32_t rem = man & 0x1FFF;
    // Round up past half, or at half to even: added, not branched on (random data would
    // mispredict half the time). May carry into the exponent, up to infinity: correct.
    half += static_cast<uint32_t>(rem > 0x1000) | (static_cast<uint32_t>(rem == 0x1000) & half);
    return sign | static_cast<uint16_t>(half);
}

float f16_to_f32(uint16_t h)
{
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1F;
    uint32_t man = h & 0x3FF;
    if (exp == 0x1F) {
        return bits_f32(sign | 0x7F800000 | (man << 13));
    }
    if (exp == 0) {
        if (man == 0) {
            return bits_f32(sign);
        }
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400));
        return bits_f32(sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3FF) << 13);
    }
    return bits_f32(sign | (exp + 127 - 15) << 23 | man << 13);
}

uint16_t f32_to_bf16(float f)
{
    const uint32_t x = f32_bits(f);
    if ((x & 0x7FFFFFFF) > 0x7F800000) {
        return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN, sign kept
    }
    return static_cast<uint16_t>((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

float bf16_to_f32(uint16_t b) { return bits_f32(static_cast<uint32_t>(b) << 16); }

namespace {

int8_t f32_to_i8(float x, float scale, int32_t zp)
{
    const double q = std::nearbyint(static_cast<double>(x) / scale);  // FE_TONEAREST: half to even
    if (std::isnan(q)) {
        return static_cast<int8_t>(zp < -128 ? -128 : zp > 127 ? 127 : zp);
    }
    const double v = q + zp;
    return static_cast<int8_t>(v < -128.0 ? -128 : v > 127.0 ? 127 : v);
}

// f16 -> f32 of every half, computed once (256 KiB): a load instead of the branches.
const float *f16_table()
{
    static const std::vector<float> table = [] {
        std::vector<float> t(65536);
        for (uint32_t h = 0; h < 65536; h++) t[h] = f16_to_f32(static_cast<uint16_t>(h));
        return t;
    }();
    return table.data();
}

// Quantised value -> f32 for all 256 byte values Q of this call's scale and zero point.
template <class Q>
struct DequantTable {
    float v[256];
    DequantTable(float scale, int32_t zp)
    {
        for (int q = std::numeric_limits<Q>::min(); q <= std::numeric_limits<Q>::max(); q++) {
            v[static_cast<uint8_t>(q)] = static_cast<float>(static_cast<int64_t>(q) - zp) * scale;
        }
    }
    float operator()(Q q) const { return v[static_cast<uint8_t>(q)]; }
};

// Converts n elements; false if cancelled. Straight into the output where it does not
// overlap the input (through an aligned copy where the output is not aligned for Out),
// else through a buffer, so that every element is converted from its original value;
// there the output stays untouched if cancelled.
template <class In, class Out, class F>
bool convert_all(const ProgramCall &call, const Span &in, const Span &out, size_t n, F f)
{
    constexpr size_t kChunk = kCancelBytes / sizeof(float);
    InView<In> src(in, n);
    const In *x = src.get();
    const bool apart = out.data + n * sizeof(Out) <= in.data || out.data >= in.data + n * sizeof(In);
    if (apart) {
        OutView<Out> dst(out, n);
        Out *y = dst.get();
        for (size_t c0 = 0; c0 < n; c0 += kChunk) {
            if (cancelled(call)) return false;
            const size_t end = std::min(n, c0 + kChunk);
            for (size_t i = c0; i < end; i++) y[i] = f(x[i]);
        }
        dst.commit();
        return true;
    }
    std::vector<Out> tmp(n);
    for (size_t c0 = 0; c0 < n; c0 += kChunk) {
        if (cancelled(call)) return false;
        const size_t end = std::min(n, c0 + kChunk);
        for (size_t i = c0; i < end; i++) tmp[i] = f(x[i]);
    }
    std::memcpy(out.data, tmp.data(), n * sizeof(Out));
    return true;
}

}  // namespace

// Bytes of one element read and written, by conversion (csd_convert_op).
constexpr uint8_t kInSize[] = {4, 4, 2, 2, 1, 4, 1};
constexpr uint8_t kOutSize[] = {2, 2, 4, 4, 4, 1, 4};

ExecResult check_convert(const ProgramCall &call, ProgramWork *)
{
    csd_convert_params p;
    if (call.nr_ranges != 2 || !read_params(call, &p) || p.op > CSD_CVT_U8_F32 || p.count == 0) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    if (p.op == CSD_CVT_F32_I8 && (!std::isfinite(p.scale) || p.scale == 0.0f)) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    if (call.ranges[0].len < bytes_of(p.count, kInSize[p.op])) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    const uint64_t out_bytes = bytes_of(p.count, kOutSize[p.op]);
    if (call.ranges[1].len < out_bytes) {
        return fail(CSD_STATUS_OUTPUT_OVERFLOW);
    }
    if (out_bytes > UINT32_MAX) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    return ok();
}

ExecResult program_convert(const ProgramCall &call)
{
    if (const ExecResult r = check_convert(call, nullptr); r.status) {
        return r;
    }
    csd_convert_params p;
    read_params(call, &p);
    const uint64_t n = p.count;
    const uint64_t out_bytes = bytes_of(n, kOutSize[p.op]);
    const Span &in = call.ranges[0], &out = call.ranges[1];
    const float scale = p.scale;
    const int32_t zp = p.zero_point;
    bool done;
    switch (p.op) {
    case CSD_CVT_F32_F16: done = convert_all<float, uint16_t>(call, in, out, n, [](auto v) { return f32_to_f16(v); }); break;
    case CSD_CVT_F32_BF16: done = convert_all<float, uint16_t>(call, in, out, n, [](auto v) { return f32_to_bf16(v); }); break;
    case CSD_CVT_F16_F32: done = convert_all<uint16_t, float>(call, in, out, n, [t = f16_table()](uint16_t v) { return t[v]; }); break;
    case CSD_CVT_BF16_F32: done = convert_all<uint16_t, float>(call, in, out, n, [](auto v) { return bf16_to_f32(v); }); break;
    case CSD_CVT_I8_F32:
        done = convert_all<int8_t, float>(call, in, out, n, DequantTable<int8_t>(scale, zp));
        break;
    case CSD_CVT_F32_I8:
        done = convert_all<float, int8_t>(call, in, out, n, [=](float x) { return f32_to_i8(x, scale, zp); });
        break;
    default:
        done = convert_all<uint8_t, float>(call, in, out, n, DequantTable<uint8_t>(scale, zp));
        break;
    }
    if (!done) {
        return fail(CSD_STATUS_ABORT_REQUESTED);
    }
    return ok(static_cast<uint32_t>(out_bytes));
}

}  // namespace csd::core
