// SPDX-License-Identifier: MIT
// conv2d (09h): NCHW f32 convolution with stride, padding and dilation, optional bias;
// im2col over blocks of output positions, then OpenBLAS sgemm. DW0 = output bytes.
#include <cblas.h>

#include <algorithm>

#include "../program.h"

namespace csd::core {

namespace {

constexpr uint64_t kColBudget = 32ull << 20;  // bytes of im2col scratch per block

// Output extent for one spatial axis; 0 when the kernel does not fit.
uint64_t out_extent(uint64_t in, uint64_t pad, uint64_t dil, uint64_t k, uint64_t stride)
{
    const uint64_t span = dil * (k - 1) + 1;
    const uint64_t padded = in + 2 * pad;
    return padded < span ? 0 : (padded - span) / stride + 1;
}

// The checked shape of a convolution.
struct Conv {
    csd_conv2d_params p;
    uint64_t P, Q, in_elems, w_elems, out_elems, crs, hw, pq, out_bytes;
};

// The convolution's checks (check_conv2d); fills *cv when they pass.
ExecResult plan(const ProgramCall &call, Conv *cv)
{
    csd_conv2d_params &p = cv->p;
    if (call.nr_ranges != 4 || !read_params(call, &p)) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    const uint32_t dims[] = {p.n, p.c, p.h, p.w, p.k, p.r, p.s, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w};
    for (uint32_t d : dims) {
        if (d == 0 || d > (1u << 24)) {
            return fail(CSD_STATUS_INVALID_PARAMETERS);
        }
    }
    if ((p.flags & ~CSD_CONV2D_HAS_BIAS) != 0 || p.pad_h > (1u << 24) || p.pad_w > (1u << 24)) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    const uint64_t P = cv->P = out_extent(p.h, p.pad_h, p.dilation_h, p.r, p.stride_h);
    const uint64_t Q = cv->Q = out_extent(p.w, p.pad_w, p.dilation_w, p.s, p.stride_w);
    if (P == 0 || Q == 0 || !mul_ok(p.n, p.c, p.h * uint64_t{p.w}, &cv->in_elems) ||
        !mul_ok(p.k, p.c, p.r * uint64_t{p.s}, &cv->w_elems) || !mul_ok(p.n, p.k, P * Q, &cv->out_elems) ||
        !mul_ok(p.c, p.r, p.s, &cv->crs) || !mul_ok(p.h, p.w, &cv->hw) || !mul_ok(P, Q, &cv->pq)) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    const Span &in = call.ranges[0], &wt = call.ranges[1], &bias = call.ranges[2], &out = call.ranges[3];
    const bool has_bias = p.flags & CSD_CONV2D_HAS_BIAS;
    if (in.len < bytes_of(cv->in_elems, 4) || wt.len < bytes_of(cv->w_elems, 4) ||
        (has_bias && bias.len < bytes_of(p.k, 4)) || cv->crs > INT32_MAX || cv->pq > INT32_MAX) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    cv->out_bytes = bytes_of(cv->out_elems, 4);
    if (out.len < cv->out_bytes) {
        return fail(CSD_STATUS_OUTPUT_OVERFLOW);
    }
    if (cv->out_bytes > UINT32_MAX) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    return ok();
}

}  // namespace

ExecResult check_conv2d(const ProgramCall &call, ProgramWork *work)
{
    Conv cv;
    const ExecResult r = plan(call, &cv);
    if (!r.status && work) work->flops = 2.0 * static_cast<double>(cv.out_elems) * static_cast<double>(cv.crs);
    return r;
}

ExecResult program_conv2d(const ProgramCall &call)
{
    Conv cv;
    if (const ExecResult r = plan(call, &cv); r.status) {
        return r;
    }
    const csd_conv2d_params &p = cv.p;
    const uint64_t Q = cv.Q, in_elems = cv.in_elems, w_elems = cv.w_elems, out_elems = cv.out_elems, crs = cv.crs,
                   hw = cv.hw, pq = cv.pq, out_bytes = cv.out_bytes;
    const Span &in = call.ranges[0], &wt = call.ranges[1], &bias = call.ranges[2], &out = call.ranges[3];
    const bool has_bias = p.flags & CSD_CONV2D_HAS_BIAS;

    InView<float> x(in, in_elems), w(wt, w_elems);
    InView<float> b(has_bias ? bias : Span{}, has_bias ? p.k : 0);
    std::vector<float> y(out_elems);  // separate: the output may overlap the input
    // Output positions (flattened p*Q+q) per block, so that the im2col scratch stays
    // within its budget and a block's gemm (2*K*CRS flops a position) within the work
    // between two cancellation checks, whatever the shapes; at least one position per block.
    const uint64_t position_flops = 2 * uint64_t{p.k} * crs;  // K < 2^32, CRS < 2^31
    const uint64_t per_block = std::max<uint64_t>(
        1, std::min({pq, kColBudget / 4 / crs, kCancelFlops / position_flops}));
    std::vector<float> col(crs * per_block);
    std::vector<float> tmp(p.k * per_block);
    for (uint64_t img = 0; img < p.n; img++) {
        const float *xi = x.get() + img * p.c * hw;
        float *yi = y.data() + img * p.k * pq;
        for (uint64_t i0 = 0; i0 < pq; i0 += per_block) {
            if (cancelled(call)) {
                return fail(CSD_STATUS_ABORT_REQUESTED);
            }
            const uint64_t ncols = std::min<uint64_t>(per_block, pq - i0);
            // col[(c,r,s), j] = x[c, oh*sh - ph + r*dh, ow*sw - pw + s*dw] (0 outside),
            // for output position i0 + j = (oh, ow)
            for (uint64_t c = 0; c < p.c; c++) {
                for (uint64_t r = 0; r < p.r; r++) {
                    for (uint64_t s = 0; s < p.s; s++) {
                        float *dst = col.data() + ((c * p.r + r) * p.s + s) * ncols;
                        for (uint64_t j = 0; j < ncols; j++) {
                            const uint64_t oh = (i0 + j) / Q, ow = (i0 + j) % Q;
                            const int64_t ih = static_cast<int64_t>(oh * p.stride_h + r * p.dilation_h) - p.pad_h;
                            const int64_t iw = static_cast<int64_t>(ow * p.stride_w + s * p.dilation_w) - p.pad_w;
                            const bool inside = ih >= 0 && ih < p.h && iw >= 0 && iw < p.w;
                            dst[j] = inside ? xi[(c * p.h + ih) * p.w + iw] : 0.0f;
                        }
                    }
                }
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(p.k),
                        static_cast<int>(ncols), static_cast<int>(crs), 1.0f, w.get(),
                        static_cast<int>(crs), col.data(), static_cast<int>(ncols), 0.0f, tmp.data(),
                        static_cast<int>(ncols));
            for (uint64_t k = 0; k < p.k; k++) {
                const float add = has_bias ? b[k] : 0.0f;
                float *yrow = yi + k * pq + i0;
                const float *trow = tmp.data() + k * ncols;
                for (uint64_t j = 0; j < ncols; j++) {
                    yrow[j] = trow[j] + add;
                }
            }
        }
    }
    std::memcpy(out.data, y.data(), out_bytes);
    return ok(static_cast<uint32_t>(out_bytes));
}

}  // namespace csd::core
