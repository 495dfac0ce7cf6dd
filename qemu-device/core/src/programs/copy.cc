// copy (01h): dst[0..len) = src; DW0 = src length.
#include "../program.h"

namespace csd::core {

ExecResult program_copy(const ProgramCall &call)
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
    std::memmove(dst.data, src.data, src.len);
    return ok(static_cast<uint32_t>(src.len));
}

}  // namespace csd::core
