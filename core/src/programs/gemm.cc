// SPDX-License-Identifier: MIT
// gemm (02h): C = alpha * op(A) * op(B) + beta * C in f32 with OpenBLAS; DW0 = m*n*4.
#include <cblas.h>

#include <algorithm>

#include "../program.h"

namespace csd::core {

namespace {

// The checked shape of a gemm: its parameters, and for a piece of the depth
// (csd_gemm_tile_params) the whole depth and the piece's first column of A.
struct Gemm {
    csd_gemm_params p;
    uint64_t k_total, k_first;
    uint64_t a_elems, b_elems, c_elems, c_bytes;
};

// The gemm's checks (check_gemm); fills *g when they pass.
ExecResult plan(const ProgramCall &call, Gemm *g)
{
    csd_gemm_params &p = g->p;
    bool tile = false;
    if (call.nr_ranges != 3) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    if (call.param_len == sizeof(csd_gemm_tile_params)) {
        csd_gemm_tile_params t;
        read_params(call, &t);
        p = t.base;
        g->k_total = t.k_total, g->k_first = t.k_first;
        tile = true;
    } else if (!read_params(call, &p)) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    } else {
        g->k_total = p.k, g->k_first = 0;
    }
    const uint32_t kIntMax = static_cast<uint32_t>(INT32_MAX);
    if (p.m == 0 || p.n == 0 || p.k == 0 || p.m > kIntMax || p.n > kIntMax || g->k_total > kIntMax ||
        (p.flags & ~(CSD_GEMM_TRANS_A | CSD_GEMM_TRANS_B)) != 0) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    if (tile) {  // a piece of the depth: whole blocks of the whole's, and no transposes
        const uint64_t kb = csd_gemm_block_k(p.n, g->k_total), end = g->k_first + p.k;
        if (p.flags != 0 || end > g->k_total || g->k_first % kb != 0 || (p.k % kb != 0 && end != g->k_total)) {
            return fail(CSD_STATUS_INVALID_PARAMETERS);
        }
    }
    const Span &a = call.ranges[0], &b = call.ranges[1], &c = call.ranges[2];
    // A: m rows of k_total (the last needing only up to k_first + k)
    const uint64_t a_need = (uint64_t{p.m} - 1) * g->k_total + g->k_first + p.k;
    if (!mul_ok(p.m, g->k_total, &g->a_elems) || !mul_ok(p.k, p.n, &g->b_elems) || !mul_ok(p.m, p.n, &g->c_elems) ||
        a.len < bytes_of(a_need, 4) || b.len < bytes_of(g->b_elems, 4)) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    g->a_elems = a_need;
    g->c_bytes = bytes_of(g->c_elems, 4);
    if (c.len < g->c_bytes) {
        return fail(CSD_STATUS_OUTPUT_OVERFLOW);
    }
    if (g->c_bytes > UINT32_MAX) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);  // DW0 could not report it
    }
    return ok();
}

}  // namespace

ExecResult check_gemm(const ProgramCall &call, ProgramWork *work)
{
    Gemm g;
    const ExecResult r = plan(call, &g);
    if (!r.status && work) work->flops = 2.0 * g.p.m * g.p.n * g.p.k;
    return r;
}

ExecResult program_gemm(const ProgramCall &call)
{
    Gemm g;
    if (const ExecResult r = plan(call, &g); r.status) {
        return r;
    }
    const csd_gemm_params &p = g.p;
    const uint64_t a_elems = g.a_elems, b_elems = g.b_elems, c_elems = g.c_elems, c_bytes = g.c_bytes;
    const Span &a = call.ranges[0], &b = call.ranges[1], &c = call.ranges[2];
    const bool ta = p.flags & CSD_GEMM_TRANS_A, tb = p.flags & CSD_GEMM_TRANS_B;
    InView<float> av(a, a_elems), bv(b, b_elems);
    OutView<float> cv(c, c_elems);
    const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    const int lda = ta ? m : static_cast<int>(g.k_total), ldb = tb ? k : n;
    // Blocks of rows of C by blocks of depth, each one OpenBLAS call of a bounded amount of work,
    // with a cancellation check between. Their sizes depend on n and the whole depth alone (not
    // m): a host that streams A and C by rows, or B by rows of depth (csd_gemm_tile_params), in
    // pieces of a multiple of them (store_stream.cc) makes the same calls, and so gets the same
    // bits, as one Execute over the whole. A later block of depth adds into C (beta 1).
    const int rows = static_cast<int>(csd_gemm_block_rows(p.n, g.k_total));
    const int depth = static_cast<int>(csd_gemm_block_k(p.n, g.k_total));
    const float *a0 = av.get() + g.k_first;  // k_first is 0 unless a piece of the depth (no transposes)
    for (int r0 = 0; r0 < m; r0 += rows) {
        const int mr = std::min(rows, m - r0);
        for (int k0 = 0; k0 < k; k0 += depth) {
            if (cancelled(call)) {
                return fail(CSD_STATUS_ABORT_REQUESTED);
            }
            const int kr = std::min(depth, k - k0);
            // op(A) rows r0.., columns k0..; op(B) rows k0..
            const float *ablk = ta ? a0 + static_cast<size_t>(k0) * m + r0 : a0 + static_cast<size_t>(r0) * lda + k0;
            const float *bblk = tb ? bv.get() + k0 : bv.get() + static_cast<size_t>(k0) * n;
            cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, mr, n, kr,
                        p.alpha, ablk, lda, bblk, ldb, k0 == 0 ? p.beta : 1.0f, cv.get() + static_cast<size_t>(r0) * n, n);
        }
    }
    cv.commit();
    return ok(static_cast<uint32_t>(c_bytes));
}

}  // namespace csd::core
