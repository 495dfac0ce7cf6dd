// checksum (08h): CRC-32C (ISA-L's crc32_iscsi) or XXH64 seed 0 (libxxhash) of a range;
// DW0 = low 32 bits, DW1 = high 32 bits.
#include "../program.h"
#include "checksum_impl.h"
#include "csd_crc32c.h"

namespace csd::core {

ExecResult program_checksum(const ProgramCall &call)
{
    uint32_t algo;
    if (call.nr_ranges != 1 || !read_params(call, &algo) || algo > CSD_CKSUM_XXH64) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    const Span &d = call.ranges[0];
    const uint64_t sum = algo == CSD_CKSUM_CRC32C ? csd_crc32c(d.data, d.len) : xxh64(d.data, d.len);
    return ok(static_cast<uint32_t>(sum), static_cast<uint32_t>(sum >> 32));
}

}  // namespace csd::core
