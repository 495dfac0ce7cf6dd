// softmax (04h): numerically stable softmax of each row of a rows x cols f32 matrix,
// in place allowed; DW0 = rows*cols*4.
#include <cmath>

#include "../program.h"

namespace csd::core {

ExecResult program_softmax(const ProgramCall &call)
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
    InView<float> x(call.ranges[0], elems);
    OutView<float> out(call.ranges[1], elems);
    uint64_t since_check = 0;  // elements since the last cancellation check (one per row at least)
    for (uint64_t r = 0; r < p.rows; r++) {
        since_check += p.cols;
        if (since_check >= kCancelBytes / 4 || r == 0) {
            since_check = 0;
            if (cancelled(call)) {
                return fail(CSD_STATUS_ABORT_REQUESTED);
            }
        }
        const float *in = x.get() + r * p.cols;
        float *o = out.get() + r * p.cols;
        float mx = in[0];
        for (uint32_t c = 1; c < p.cols; c++) {
            mx = std::fmax(mx, in[c]);
        }
        double sum = 0.0;
        for (uint32_t c = 0; c < p.cols; c++) {
            const float e = std::exp(in[c] - mx);
            o[c] = e;
            sum += e;
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (uint32_t c = 0; c < p.cols; c++) {
            o[c] *= inv;
        }
    }
    out.commit();
    return ok(static_cast<uint32_t>(bytes));
}

}  // namespace csd::core
