/* SPDX-License-Identifier: MIT */
// checksum_impl.h - XXH64 from libxxhash, or the core's portable version where it is
// missing. CRC-32C is spec/csd_crc32c.h (shared with the host library).
#pragma once

#include <cstddef>
#include <cstdint>

namespace csd::core {

// XXH64 of len bytes with seed 0 into *out; false (nothing in *out) if *cancel became
// non-zero, which is checked every kCancelBytes.
bool xxh64(const uint8_t *data, uint64_t len, const int *cancel, uint64_t *out);

}  // namespace csd::core
