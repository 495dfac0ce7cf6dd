// SPDX-License-Identifier: MIT
// crc32c.cc - CRC-32C over ISA-L where the build found it (CSD_HAVE_ISAL), else a
// portable slicing-by-8 version (hosts without ISA-L; tested against the same vectors).
#include "csd_crc32c.h"

#include <cstring>

#ifdef CSD_HAVE_ISAL
#include <isa-l/crc.h>
#endif

#ifdef CSD_HAVE_ISAL
uint32_t csd_crc32c_extend(uint32_t prev, const void *bytes, uint64_t len)
{
    auto *data = static_cast<const uint8_t *>(bytes);
    uint32_t crc = prev ^ 0xFFFFFFFFu;
    while (len > 0) {  // ISA-L takes an int length
        const int chunk = len > (1u << 30) ? (1 << 30) : static_cast<int>(len);
        crc = crc32_iscsi(const_cast<uint8_t *>(data), chunk, crc);
        data += chunk;
        len -= static_cast<uint64_t>(chunk);
    }
    return crc ^ 0xFFFFFFFFu;
}
#else
namespace {
struct Crc32cTable {
    uint32_t t[8][256];
    Crc32cTable()
    {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) {
                c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
            }
            t[0][i] = c;
        }
        for (uint32_t i = 0; i < 256; i++) {
            for (int s = 1; s < 8; s++) {
                t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
            }
        }
    }
};
}  // namespace

uint32_t csd_crc32c_extend(uint32_t prev, const void *bytes, uint64_t len)
{
    auto *data = static_cast<const uint8_t *>(bytes);
    static const Crc32cTable tab;
    uint32_t crc = prev ^ 0xFFFFFFFFu;
    while (len >= 8) {  // slicing by 8
        uint64_t w;
        std::memcpy(&w, data, 8);
        w ^= crc;
        crc = tab.t[7][w & 0xFF] ^ tab.t[6][(w >> 8) & 0xFF] ^ tab.t[5][(w >> 16) & 0xFF] ^
              tab.t[4][(w >> 24) & 0xFF] ^ tab.t[3][(w >> 32) & 0xFF] ^ tab.t[2][(w >> 40) & 0xFF] ^
              tab.t[1][(w >> 48) & 0xFF] ^ tab.t[0][w >> 56];
        data += 8;
        len -= 8;
    }
    while (len--) {
        crc = (crc >> 8) ^ tab.t[0][(crc ^ *data++) & 0xFF];
    }
    return crc ^ 0xFFFFFFFFu;
}
#endif


uint32_t csd_crc32c(const void *data, uint64_t len) { return csd_crc32c_extend(0, data, len); }
