// SPDX-License-Identifier: MIT
// convert: half / bfloat16 rounding (nearest even) against references built from the bit
// layouts here, and int8 / uint8 quantisation.
#include <cmath>
#include <limits>

#include "core_fixture.h"

namespace {

class Convert : public CoreTest {
protected:
    template <class In, class Out>
    std::vector<Out> run(uint32_t op, const std::vector<In> &in, float scale = 1, int32_t zp = 0)
    {
        put(0, in);
        csd_convert_params p{op, static_cast<uint32_t>(in.size()), scale, zp};
        auto r = exec(CSD_PROG_CONVERT, {{0, in.size() * sizeof(In)}, {1 << 20, in.size() * sizeof(Out)}}, p);
        EXPECT_OK(r);
        EXPECT_EQ(r.dw0, in.size() * sizeof(Out));
        return get<Out>(1 << 20, in.size());
    }
};

float from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// Reference half -> double decoding from the IEEE 754 binary16 definition.
double half_value(uint16_t h)
{
    const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

// Reference rounding: the half nearest to x (ties to even mantissa), found by search.
uint16_t nearest_half(float x)
{
    if (std::isnan(x)) return 0x7E00;
    uint16_t best = 0;
    double bestd = INFINITY;
    const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    for (uint32_t h = 0; h <= 0x7C00; h++) {
        const double d = std::fabs(half_value(static_cast<uint16_t>(h)) - std::fabs(double(x)));
        if (d < bestd || (d == bestd && (h & 1) == 0)) {
            best = static_cast<uint16_t>(h);
            bestd = d;
        }
    }
    // values beyond max half + half an ulp round to infinity
    if (std::fabs(double(x)) >= 65520.0) best = 0x7C00;
    return sign | best;
}

TEST_F(Convert, F32ToF16RoundsToNearestEven)
{
    std::vector<float> in{0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65519.0f, 65520.0f, 1e-8f, 6e-8f, 3e-8f,
                          5.9604645e-08f, 2.9802322e-08f, 1.0009765625f, 1.00048828125f, 1.00146484375f,
                          INFINITY, -INFINITY, 0.333333f, 6.1035156e-05f, 6.0975552e-05f};
    auto more = random_vector<float>(300, 31, -70000, 70000);
    in.insert(in.end(), more.begin(), more.end());
    auto tiny = random_vector<float>(100, 32, -1e-4, 1e-4);
    in.insert(in.end(), tiny.begin(), tiny.end());
    auto out = run<float, uint16_t>(CSD_CVT_F32_F16, in);
    for (size_t i = 0; i < in.size(); i++) {
        ASSERT_EQ(out[i], nearest_half(in[i])) << "x = " << in[i];
    }
    auto nan = run<float, uint16_t>(CSD_CVT_F32_F16, std::vector<float>{NAN});
    EXPECT_EQ(nan[0] & 0x7C00, 0x7C00);
    EXPECT_NE(nan[0] & 0x3FF, 0);
}

TEST_F(Convert, F16ToF32Exact)
{
    std::vector<uint16_t> all;
    for (uint32_t h = 0; h < 65536; h++) all.push_back(static_cast<uint16_t>(h));
    auto out = run<uint16_t, float>(CSD_CVT_F16_F32, all);
    for (uint32_t h = 0; h < 65536; h++) {
        const double want = half_value(static_cast<uint16_t>(h));
        if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(out[h])) << h;
        } else {
            ASSERT_EQ(double(out[h]), want) << h;
            ASSERT_EQ(std::signbit(out[h]), (h & 0x8000) != 0);
        }
    }
}

TEST_F(Convert, Bf16RoundTrip)
{
    // 1 + 2^-8 is halfway between two bf16 values: ties to even (down); 1 + 3*2^-8 ties up.
    std::vector<float> in{1.0f, from_bits(0x3F808000), from_bits(0x3F818000), from_bits(0x3F808001), -3.0f, INFINITY};
    auto out = run<float, uint16_t>(CSD_CVT_F32_BF16, in);
    EXPECT_EQ(out[0], 0x3F80);
    EXPECT_EQ(out[1], 0x3F80);
    EXPECT_EQ(out[2], 0x3F82);
    EXPECT_EQ(out[3], 0x3F81);
    EXPECT_EQ(out[4], 0xC040);
    EXPECT_EQ(out[5], 0x7F80);
    auto back = run<uint16_t, float>(CSD_CVT_BF16_F32, out);
    EXPECT_EQ(back[2], from_bits(0x3F820000));
    auto nan = run<float, uint16_t>(CSD_CVT_F32_BF16, std::vector<float>{from_bits(0x7F800001)});
    EXPECT_TRUE(std::isnan(from_bits(uint32_t{nan[0]} << 16)));
}

TEST_F(Convert, Quantisation)
{
    std::vector<int8_t> q{-128, -1, 0, 1, 127};
    auto f = run<int8_t, float>(CSD_CVT_I8_F32, q, 0.5f, 3);
    for (size_t i = 0; i < q.size(); i++) EXPECT_EQ(f[i], (q[i] - 3) * 0.5f);
    std::vector<uint8_t> u{0, 128, 255};
    auto fu = run<uint8_t, float>(CSD_CVT_U8_F32, u, 0.25f, 128);
    for (size_t i = 0; i < u.size(); i++) EXPECT_EQ(fu[i], (u[i] - 128) * 0.25f);
    // round half to even of x/scale, then + zero point, clamped
    std::vector<float> x{0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 100.0f, -100.0f, 0.74f, NAN};
    auto qi = run<float, int8_t>(CSD_CVT_F32_I8, x, 1.0f, 0);
    EXPECT_EQ(qi, (std::vector<int8_t>{0, 2, 2, 0, -2, 100, -100, 1, 0}));
    auto qz = run<float, int8_t>(CSD_CVT_F32_I8, x, 0.5f, 10);
    EXPECT_EQ(qz, (std::vector<int8_t>{11, 13, 15, 9, 7, 127, -128, 11, 10}));
}

// Dequantisation of every byte value, zero points at the ends of their range (the
// subtraction needs 64 bits) against the formula; conversions whose output overlaps their
// input (each element from its original value) and whose output is not aligned.
TEST_F(Convert, EveryByteValueOverlapAndAlignment)
{
    std::vector<int8_t> q;
    std::vector<uint8_t> u;
    for (int i = 0; i < 256; i++) q.push_back(static_cast<int8_t>(i)), u.push_back(static_cast<uint8_t>(i));
    for (int32_t zp : {0, -7, 200, INT32_MIN, INT32_MAX}) {
        const float scale = 0.37f;
        auto f = run<int8_t, float>(CSD_CVT_I8_F32, q, scale, zp);
        auto fu = run<uint8_t, float>(CSD_CVT_U8_F32, u, scale, zp);
        for (int i = 0; i < 256; i++) {
            ASSERT_EQ(f[i], static_cast<float>(int64_t{q[i]} - zp) * scale) << i << " zp " << zp;
            ASSERT_EQ(fu[i], static_cast<float>(int64_t{u[i]} - zp) * scale) << i << " zp " << zp;
        }
    }
    // f16 -> f32 in place (the output grows over input not yet read) and to an odd address
    std::vector<uint16_t> h;
    for (uint32_t i = 0; i < 65536; i += 3) h.push_back(static_cast<uint16_t>(i));
    const auto apart = run<uint16_t, float>(CSD_CVT_F16_F32, h);
    put(0, h);
    csd_convert_params p{CSD_CVT_F16_F32, static_cast<uint32_t>(h.size()), 1, 0};
    EXPECT_OK(exec(CSD_PROG_CONVERT, {{0, h.size() * 2}, {0, h.size() * 4}}, p));
    auto in_place = get<float>(0, h.size());
    EXPECT_EQ(std::memcmp(in_place.data(), apart.data(), h.size() * 4), 0);
    put(0, h);
    EXPECT_OK(exec(CSD_PROG_CONVERT, {{0, h.size() * 2}, {(1 << 20) + 1, h.size() * 4}}, p));
    EXPECT_EQ(std::memcmp(slm((1 << 20) + 1), apart.data(), h.size() * 4), 0);
    // f32 -> f16 in place (shrinks), against the same apart
    auto xs = random_vector<float>(5000, 41, -70000, 70000);
    const auto f16 = run<float, uint16_t>(CSD_CVT_F32_F16, xs);
    put(0, xs);
    csd_convert_params p2{CSD_CVT_F32_F16, 5000, 1, 0};
    EXPECT_OK(exec(CSD_PROG_CONVERT, {{0, 5000 * 4}, {2, 5000 * 2}}, p2));  // overlapping, shifted
    EXPECT_EQ(get<uint8_t>(2, 10000), std::vector<uint8_t>(reinterpret_cast<const uint8_t *>(f16.data()),
                                                            reinterpret_cast<const uint8_t *>(f16.data()) + 10000));
}

TEST_F(Convert, Errors)
{
    csd_convert_params p{7, 4, 1, 0};
    EXPECT_STATUS(exec(CSD_PROG_CONVERT, {{0, 16}, {64, 16}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p = {CSD_CVT_F32_F16, 4, 1, 0};
    EXPECT_STATUS(exec(CSD_PROG_CONVERT, {{0, 16}, {64, 6}}, p), CSD_STATUS_OUTPUT_OVERFLOW);
    EXPECT_STATUS(exec(CSD_PROG_CONVERT, {{0, 12}, {64, 8}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p = {CSD_CVT_F32_I8, 4, 0.0f, 0};
    EXPECT_STATUS(exec(CSD_PROG_CONVERT, {{0, 16}, {64, 4}}, p), CSD_STATUS_INVALID_PARAMETERS);
}

}  // namespace
