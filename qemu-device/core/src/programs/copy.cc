// SPDX-License-Identifier: MIT
// copy (01h): dst[0..len) = src; DW0 = src length.
#include <algorithm>

#include "../program.h"

namespace csd::core {

ExecResult check_copy(const ProgramCall &call, ProgramWork *)
{
    if (call.nr_ranges != 2 || call.param_len != 0) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    const Span &src = call.ranges[0];
    const Span &dst = call.ranges[1];
    if (dst.len < src.len) {
        return fail(CSD_STATUS_OUTPUT_OVERFLOW, 0, static_cast<uint32_t>(src.len));
    }
    if (src.len > UINT32_MAX) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);  // DW0 could not report it
    }
    return ok();
}

ExecResult program_copy(const ProgramCall &call)
{
    if (const ExecResult r = check_copy(call, nullptr); r.status) {
        return r;
    }
    const Span &src = call.ranges[0];
    const Span &dst = call.ranges[1];
    // In chunks, front to back or back to front as memmove would for an overlap.
    const uint64_t len = src.len;
    const bool backwards = dst.data > src.data && dst.data < src.data + len;
    for (uint64_t done = 0; done < len; done += kCancelBytes) {
        if (cancelled(call)) {
            return fail(CSD_STATUS_ABORT_REQUESTED);
        }
        const uint64_t n = std::min(kCancelBytes, len - done);
        const uint64_t at = backwards ? len - done - n : done;
        std::memmove(dst.data + at, src.data + at, n);
    }
    return ok(static_cast<uint32_t>(len));
}

}  // namespace csd::core
