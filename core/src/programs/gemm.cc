// SPDX-License-Identifier: MIT
// gemm (02h): C = alpha * op(A) * op(B) + beta * C in f32 with OpenBLAS; DW0 = m*n*4.
#include <cblas.h>

#include <algorithm>

#include "../program.h"

namespace csd::core {

namespace {

// The checked shape of a gemm.
struct Gemm {
    csd_gemm_params p;
    uint64_t a_elems, b_elems, c_elems, c_bytes;
};

// The gemm's checks (check_gemm); fills *g when they pass.
ExecResult plan(const ProgramCall &call, Gemm *g)
{
    csd_gemm_params &p = g->p;
    if (call.nr_ranges != 3 || !read_params(call, &p)) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    const uint32_t kIntMax = static_cast<uint32_t>(INT32_MAX);
    if (p.m == 0 || p.n == 0 || p.k == 0 || p.m > kIntMax || p.n > kIntMax || p.k > kIntMax ||
        (p.flags & ~(CSD_GEMM_TRANS_A | CSD_GEMM_TRANS_B)) != 0) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    const Span &a = call.ranges[0], &b = call.ranges[1], &c = call.ranges[2];
    if (!mul_ok(p.m, p.k, &g->a_elems) || !mul_ok(p.k, p.n, &g->b_elems) || !mul_ok(p.m, p.n, &g->c_elems) ||
        a.len < bytes_of(g->a_elems, 4) || b.len < bytes_of(g->b_elems, 4)) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
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
    // Blocks of rows of C, each a bounded amount of work, with a cancellation check between.
    // Their size depends on n and k alone (not m): a host that streams A and C through SLM in
    // pieces of a multiple of it (store_stream.cc) makes the same OpenBLAS calls, and so gets
    // the same bits, as one Execute over the whole.
    const int rows = static_cast<int>(csd_gemm_block_rows(p.n, p.k));
    for (int r0 = 0; r0 < m; r0 += rows) {
        if (cancelled(call)) {
            return fail(CSD_STATUS_ABORT_REQUESTED);
        }
        const int mr = std::min(rows, m - r0);
        const float *ablk = ta ? av.get() + r0 : av.get() + static_cast<size_t>(r0) * k;  // op(A) rows r0..
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, mr, n, k,
                    p.alpha, ablk, ta ? m : k, bv.get(), tb ? k : n, p.beta, cv.get() + static_cast<size_t>(r0) * n, n);
    }
    cv.commit();
    return ok(static_cast<uint32_t>(c_bytes));
}

}  // namespace csd::core
