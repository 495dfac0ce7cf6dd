// SPDX-License-Identifier: MIT
// checksum (08h): CRC-32C (ISA-L's crc32_iscsi) or XXH64 seed 0 (libxxhash) of a range;
// DW0 = low 32 bits, DW1 = high 32 bits.
#include <algorithm>

#include "../program.h"
#include "checksum_impl.h"
#include "csd_crc32c.h"

namespace csd::core {

ExecResult check_checksum(const ProgramCall &call, ProgramWork *)
{
    uint32_t algo;
    if (call.nr_ranges != 1 || !read_params(call, &algo) || algo > CSD_CKSUM_XXH64) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    return ok();
}

ExecResult program_checksum(const ProgramCall &call)
{
    if (const ExecResult r = check_checksum(call, nullptr); r.status) {
        return r;
    }
    uint32_t algo = 0;
    read_params(call, &algo);
    const Span &d = call.ranges[0];
    uint64_t sum = 0;
    if (algo == CSD_CKSUM_CRC32C) {
        uint32_t crc = 0;
        for (uint64_t done = 0; done < d.len; done += kCancelBytes) {  // in chunks, cancellable
            if (cancelled(call)) {
                return fail(CSD_STATUS_ABORT_REQUESTED);
            }
            crc = csd_crc32c_extend(crc, d.data + done, std::min(kCancelBytes, d.len - done));
        }
        sum = crc;
    } else if (!xxh64(d.data, d.len, call.cancel, &sum)) {
        return fail(CSD_STATUS_ABORT_REQUESTED);
    }
    return ok(static_cast<uint32_t>(sum), static_cast<uint32_t>(sum >> 32));
}

}  // namespace csd::core
