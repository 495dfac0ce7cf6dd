// SPDX-License-Identifier: MIT
// softmax (04h): numerically stable softmax of each row of a rows x cols f32 matrix,
// in place allowed; DW0 = rows*cols*4.
#include <cmath>

#include "../program.h"

namespace csd::core {

ExecResult check_softmax(const ProgramCall &call, ProgramWork *)
{
    csd_softmax_params p;
    if (call.nr_ranges != 2 || !read_params(call, &p) || p.rows == 0 || p.cols == 0) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    uint64_t elems;
    if (!mul_ok(p.rows, p.cols, &elems) || call.ranges[0].len < bytes_of(elems, 4)) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    const uint64_t bytes = bytes_of(elems, 4);
    if (call.ranges[1].len < bytes) {
        return fail(CSD_STATUS_OUTPUT_OVERFLOW);
    }
    if (bytes > UINT32_MAX) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    return ok();
}

ExecResult program_softmax(const ProgramCall &call)
{
    if (const ExecResult r = check_softmax(call, nullptr); r.status) {
        return r;
    }
    csd_softmax_params p;
    read_params(call, &p);
    const uint64_t elems = uint64_t{p.rows} * p.cols, bytes = elems * 4;  // checked: no overflow
    InView<float> x(call.ranges[0], elems);
    OutView<float> out(call.ranges[1], elems);
    // Checked every kCancelBytes of elements read or written, inside a row as well: a row
    // may be as wide as SLM.
    CancelPoints points(call, kCancelBytes / 4);
    for (uint64_t r = 0; r < p.rows; r++) {
        const float *in = x.get() + r * p.cols;
        float *o = out.get() + r * p.cols;
        float mx = in[0];
        double sum = 0.0;
        for (int pass = 0; pass < 3; pass++) {  // the maximum, the exponentials and their sum, the scaling
            const float inv = pass == 2 ? static_cast<float>(1.0 / sum) : 0.0f;
            for (uint64_t c0 = 0, piece; c0 < p.cols; c0 += piece) {
                if ((piece = points.next(p.cols - c0)) == 0) {
                    return fail(CSD_STATUS_ABORT_REQUESTED);
                }
                const uint64_t c1 = c0 + piece;
                if (pass == 0) {
                    for (uint64_t c = c0; c < c1; c++) mx = std::fmax(mx, in[c]);
                } else if (pass == 1) {
                    for (uint64_t c = c0; c < c1; c++) {
                        const float e = std::exp(in[c] - mx);
                        o[c] = e;
                        sum += e;
                    }
                } else {
                    for (uint64_t c = c0; c < c1; c++) o[c] *= inv;
                }
            }
        }
    }
    out.commit();
    return ok(static_cast<uint32_t>(bytes));
}

}  // namespace csd::core
