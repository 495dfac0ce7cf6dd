// checksum_impl.h - CRC-32C and XXH64 from the libraries Debian packages (ISA-L and
// libxxhash), or the core's portable versions where they are missing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace csd {

// CRC-32C (Castagnoli, reflected, init and final xor FFFFFFFFh) of len bytes.
uint32_t crc32c(const uint8_t *data, uint64_t len);

// XXH64 of len bytes with seed 0.
uint64_t xxh64(const uint8_t *data, uint64_t len);

}  // namespace csd
