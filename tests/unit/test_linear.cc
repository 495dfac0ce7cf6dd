// SPDX-License-Identifier: MIT
// gemm and conv2d against naive double-precision reference loops.
#include <cmath>

#include "core_fixture.h"

namespace {

class Linear : public CoreTest {};

// Reference: C = alpha * op(A) op(B) + beta * C with plain loops in double.
std::vector<float> ref_gemm(const std::vector<float> &a, const std::vector<float> &b, std::vector<float> c,
                            uint32_t m, uint32_t n, uint32_t k, bool ta, bool tb, float alpha, float beta)
{
    for (uint32_t i = 0; i < m; i++) {
        for (uint32_t j = 0; j < n; j++) {
            double s = 0;
            for (uint32_t l = 0; l < k; l++) {
                const double av = ta ? a[l * m + i] : a[i * k + l];
                const double bv = tb ? b[j * k + l] : b[l * n + j];
                s += av * bv;
            }
            c[i * n + j] = static_cast<float>(alpha * s + beta * c[i * n + j]);
        }
    }
    return c;
}

void expect_near_all(const std::vector<float> &got, const std::vector<float> &want, double tol)
{
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); i++) {
        ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "at " << i;
    }
}

struct GemmCase {
    uint32_t m, n, k, flags;
    float alpha, beta;
};

class GemmCases : public Linear, public ::testing::WithParamInterface<GemmCase> {};

TEST_P(GemmCases, MatchesReference)
{
    const GemmCase gc = GetParam();
    auto a = random_vector<float>(gc.m * gc.k, 1), b = random_vector<float>(gc.k * gc.n, 2),
         c = random_vector<float>(gc.m * gc.n, 3);
    const uint64_t A = 0, B = (a.size() * 4 + 4095) / 4096 * 4096, C = B + (b.size() * 4 + 4095) / 4096 * 4096;
    put(A, a);
    put(B, b);
    put(C, c);
    csd_gemm_params p{gc.m, gc.n, gc.k, gc.flags, gc.alpha, gc.beta};
    auto r = exec(CSD_PROG_GEMM, {{A, a.size() * 4}, {B, b.size() * 4}, {C, c.size() * 4}}, p);
    EXPECT_OK(r);
    EXPECT_EQ(r.dw0, gc.m * gc.n * 4);
    expect_near_all(get<float>(C, c.size()),
                    ref_gemm(a, b, c, gc.m, gc.n, gc.k, gc.flags & 1, gc.flags & 2, gc.alpha, gc.beta), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmCases,
                         ::testing::Values(GemmCase{1, 1, 1, 0, 1, 0}, GemmCase{7, 5, 3, 0, 1, 0},
                                           GemmCase{33, 17, 65, 1, 1, 0}, GemmCase{16, 31, 9, 2, 0.5f, 0},
                                           GemmCase{12, 12, 12, 3, -2.0f, 1.5f},
                                           GemmCase{64, 48, 80, 0, 1.0f, 1.0f},
                                           GemmCase{5, 9, 4, 0, 0.0f, 2.0f},
                                           // k * n > 2^20: blocks of depth (csd_gemm_block_k), beta
                                           // applied once, and blocks of rows (csd_gemm_block_rows)
                                           GemmCase{300, 300, 4000, 0, 1.0f, 0.5f},
                                           GemmCase{270, 300, 4000, 3, -1.5f, 2.0f},
                                           GemmCase{70, 20000, 70, 1, 1.0f, 0.0f}));

// The blocks: depth all of k while B holds at most 2^20 elements, else multiples of 64 of at most
// 4 MiB of B (n <= 16384); rows at most 256, 2^30 flops a call and 2^20 elements of A's and C's rows.
TEST_F(Linear, GemmBlocks)
{
    EXPECT_EQ(csd_gemm_block_k(1024, 1024), 1024u);
    EXPECT_EQ(csd_gemm_block_k(300, 4000), 3456u);
    EXPECT_EQ(csd_gemm_block_k(4096, 4096), 256u);
    EXPECT_EQ(csd_gemm_block_k(1u << 20, 4096), 64u);
    EXPECT_EQ(csd_gemm_block_k(20000, 70), 64u);
    EXPECT_EQ(csd_gemm_block_rows(1024, 1024), 256u);
    EXPECT_EQ(csd_gemm_block_rows(256, 12388), 84u);  // 2^20 / k
    EXPECT_EQ(csd_gemm_block_rows(1u << 21, 64), 1u);
}

// A piece of the depth (csd_gemm_tile_params) in the drive's blocks adds up, bit for bit, as the
// whole does in one Execute; pieces that would cut a block, or transposes, are refused.
TEST_F(Linear, GemmDepthPieces)
{
    const uint32_t m = 40, n = 300, k = 4000, kb = static_cast<uint32_t>(csd_gemm_block_k(n, k));
    ASSERT_LT(kb, k);
    auto a = random_vector<float>(m * k, 11), b = random_vector<float>(k * n, 12);
    const uint64_t A = 0, B = 1 << 20, C1 = 6 << 20, C2 = 7 << 20, B2 = 8 << 20;
    put(A, a);
    put(B, b);
    csd_gemm_params whole{m, n, k, 0, 1.0f, 0.0f};
    EXPECT_OK(exec(CSD_PROG_GEMM, {{A, a.size() * 4}, {B, b.size() * 4}, {C1, m * n * 4}}, whole));
    for (uint32_t k0 = 0; k0 < k; k0 += kb) {
        const uint32_t kr = std::min(kb, k - k0);
        std::memcpy(slm(B2), b.data() + static_cast<size_t>(k0) * n, static_cast<size_t>(kr) * n * 4);  // B's rows alone
        csd_gemm_tile_params t{{m, n, kr, 0, 1.0f, k0 == 0 ? 0.0f : 1.0f}, k, k0};
        EXPECT_OK(exec(CSD_PROG_GEMM, {{A, a.size() * 4}, {B2, uint64_t{kr} * n * 4}, {C2, m * n * 4}}, t));
    }
    EXPECT_EQ(std::memcmp(slm(C1), slm(C2), m * n * 4), 0);
    expect_near_all(get<float>(C2, m * n), ref_gemm(a, b, std::vector<float>(m * n), m, n, k, false, false, 1, 0), 1e-4);
    // refused: a first column not at a block, a piece that ends inside one, past k, transposes
    for (const csd_gemm_tile_params bad : {csd_gemm_tile_params{{m, n, kb, 0, 1, 0}, k, 64},
                                          csd_gemm_tile_params{{m, n, kb - 64, 0, 1, 0}, k, 0},
                                          csd_gemm_tile_params{{m, n, kb, 0, 1, 0}, k, kb},
                                          csd_gemm_tile_params{{m, n, kb, CSD_GEMM_TRANS_B, 1, 0}, k, 0}}) {
        EXPECT_STATUS(exec(CSD_PROG_GEMM, {{A, a.size() * 4}, {B, b.size() * 4}, {C2, m * n * 4}}, bad),
                      CSD_STATUS_INVALID_PARAMETERS);
    }
    // A shorter than m rows of k_total
    const csd_gemm_tile_params last{{m, n, k - kb, 0, 1, 1}, k, kb};
    EXPECT_STATUS(exec(CSD_PROG_GEMM, {{A, a.size() * 4 - 4}, {B, b.size() * 4}, {C2, m * n * 4}}, last),
                  CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_OK(exec(CSD_PROG_GEMM, {{A, a.size() * 4}, {B, b.size() * 4}, {C2, m * n * 4}}, last));
}

TEST_F(Linear, GemmUnalignedRanges)
{
    auto a = random_vector<float>(6, 4), b = random_vector<float>(6, 5);
    std::memcpy(slm(1), a.data(), 24);
    std::memcpy(slm(4099), b.data(), 24);
    csd_gemm_params p{2, 2, 3, 0, 1, 0};
    EXPECT_OK(exec(CSD_PROG_GEMM, {{1, 24}, {4099, 24}, {8191, 16}}, p));
    std::vector<float> c(4);
    std::memcpy(c.data(), slm(8191), 16);
    expect_near_all(c, ref_gemm(a, b, std::vector<float>(4), 2, 2, 3, false, false, 1, 0), 1e-5);
}

TEST_F(Linear, GemmErrors)
{
    csd_gemm_params p{4, 4, 4, 0, 1, 0};
    EXPECT_STATUS(exec(CSD_PROG_GEMM, {{0, 64}, {64, 64}, {128, 60}}, p), CSD_STATUS_OUTPUT_OVERFLOW);
    EXPECT_STATUS(exec(CSD_PROG_GEMM, {{0, 60}, {64, 64}, {128, 64}}, p), CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_STATUS(exec(CSD_PROG_GEMM, {{0, 64}, {64, 64}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p.flags = 4;
    EXPECT_STATUS(exec(CSD_PROG_GEMM, {{0, 64}, {64, 64}, {128, 64}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p = {0, 4, 4, 0, 1, 0};
    EXPECT_STATUS(exec(CSD_PROG_GEMM, {{0, 64}, {64, 64}, {128, 64}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p = {0xFFFFFFFF, 0xFFFFFFFF, 4, 0, 1, 0};  // sizes overflow
    EXPECT_STATUS(exec(CSD_PROG_GEMM, {{0, 64}, {64, 64}, {128, 64}}, p), CSD_STATUS_INVALID_PARAMETERS);
    uint32_t short_params[5] = {4, 4, 4, 0, 0};
    EXPECT_STATUS(exec(CSD_PROG_GEMM, {{0, 64}, {64, 64}, {128, 64}}, short_params), CSD_STATUS_INVALID_PARAMETERS);
}

// Reference: direct convolution loops in double.
std::vector<float> ref_conv(const std::vector<float> &x, const std::vector<float> &w, const std::vector<float> *bias,
                            const csd_conv2d_params &p, uint32_t P, uint32_t Q)
{
    std::vector<float> y(p.n * p.k * P * Q);
    for (uint32_t n = 0; n < p.n; n++)
        for (uint32_t k = 0; k < p.k; k++)
            for (uint32_t oh = 0; oh < P; oh++)
                for (uint32_t ow = 0; ow < Q; ow++) {
                    double s = bias ? (*bias)[k] : 0.0;
                    for (uint32_t c = 0; c < p.c; c++)
                        for (uint32_t r = 0; r < p.r; r++)
                            for (uint32_t t = 0; t < p.s; t++) {
                                const int ih = int(oh * p.stride_h + r * p.dilation_h) - int(p.pad_h);
                                const int iw = int(ow * p.stride_w + t * p.dilation_w) - int(p.pad_w);
                                if (ih < 0 || iw < 0 || ih >= int(p.h) || iw >= int(p.w)) continue;
                                s += double(x[((n * p.c + c) * p.h + ih) * p.w + iw]) *
                                     w[((k * p.c + c) * p.r + r) * p.s + t];
                            }
                    y[((n * p.k + k) * P + oh) * Q + ow] = static_cast<float>(s);
                }
    return y;
}

class Conv2dCases : public Linear, public ::testing::WithParamInterface<csd_conv2d_params> {};

TEST_P(Conv2dCases, MatchesReference)
{
    const csd_conv2d_params p = GetParam();
    const uint32_t P = (p.h + 2 * p.pad_h - p.dilation_h * (p.r - 1) - 1) / p.stride_h + 1;
    const uint32_t Q = (p.w + 2 * p.pad_w - p.dilation_w * (p.s - 1) - 1) / p.stride_w + 1;
    auto x = random_vector<float>(p.n * p.c * p.h * p.w, 7), w = random_vector<float>(p.k * p.c * p.r * p.s, 8),
         bias = random_vector<float>(p.k, 9);
    const bool has_bias = p.flags & 1;
    const uint64_t X = 0, W = 4 << 20, B = 5 << 20, Y = 6 << 20;
    put(X, x);
    put(W, w);
    put(B, bias);
    const uint64_t ybytes = uint64_t{p.n} * p.k * P * Q * 4;
    auto r = exec(CSD_PROG_CONV2D, {{X, x.size() * 4}, {W, w.size() * 4}, {B, has_bias ? bias.size() * 4 : 0}, {Y, ybytes}}, p);
    EXPECT_OK(r);
    EXPECT_EQ(r.dw0, ybytes);
    expect_near_all(get<float>(Y, ybytes / 4), ref_conv(x, w, has_bias ? &bias : nullptr, p, P, Q), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dCases,
                         ::testing::Values(csd_conv2d_params{1, 1, 5, 5, 1, 3, 3, 1, 1, 0, 0, 1, 1, 0},
                                           csd_conv2d_params{2, 3, 8, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},
                                           csd_conv2d_params{1, 2, 9, 9, 3, 3, 2, 2, 3, 1, 0, 1, 1, 1},
                                           csd_conv2d_params{1, 2, 10, 10, 2, 3, 3, 1, 1, 2, 2, 2, 2, 0},
                                           csd_conv2d_params{3, 4, 6, 6, 5, 1, 1, 1, 1, 0, 0, 1, 1, 1}));

TEST_F(Linear, Conv2dErrors)
{
    csd_conv2d_params p{1, 1, 4, 4, 1, 3, 3, 1, 1, 0, 0, 1, 1, 1};  // bias flag set
    EXPECT_STATUS(exec(CSD_PROG_CONV2D, {{0, 64}, {1024, 36}, {0, 0}, {2048, 16}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p.flags = 0;
    EXPECT_STATUS(exec(CSD_PROG_CONV2D, {{0, 64}, {1024, 36}, {0, 0}, {2048, 12}}, p), CSD_STATUS_OUTPUT_OVERFLOW);
    EXPECT_OK(exec(CSD_PROG_CONV2D, {{0, 64}, {1024, 36}, {0, 0}, {2048, 16}}, p));
    p.r = 9;  // kernel larger than the padded input
    EXPECT_STATUS(exec(CSD_PROG_CONV2D, {{0, 64}, {1024, 36 * 3}, {0, 0}, {2048, 16}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p.r = 3;
    p.stride_h = 0;
    EXPECT_STATUS(exec(CSD_PROG_CONV2D, {{0, 64}, {1024, 36}, {0, 0}, {2048, 16}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p.stride_h = 1;
    p.flags = 2;
    EXPECT_STATUS(exec(CSD_PROG_CONV2D, {{0, 64}, {1024, 36}, {0, 0}, {2048, 16}}, p), CSD_STATUS_INVALID_PARAMETERS);
}

TEST_F(Linear, Conv2dStopsWhenCancelled)
{
    csd_conv2d_params p{1, 1, 4, 4, 1, 3, 3, 1, 1, 0, 0, 1, 1, 0};
    auto d = make_descriptor(CSD_PROG_CONV2D, {{0, 64}, {1024, 36}, {0, 0}, {2048, 16}}, &p, sizeof p);
    csd_exec *job = nullptr;
    ASSERT_EQ(csd_core_exec_prepare(core, d.data(), static_cast<uint32_t>(d.size()), &job), 0);
    const int cancel = 1;  // as a controller reset sets it while the program runs
    uint32_t dw0, dw1;
    EXPECT_EQ(CSD_STATUS_CODE(csd_core_exec_run(core, job, &cancel, &dw0, &dw1)), CSD_STATUS_ABORT_REQUESTED);
}

}  // namespace
