// CRC-32C and XXH64 over the libraries Debian packages where the build found them
// (CSD_HAVE_ISAL, CSD_HAVE_XXHASH), else portable versions (for hosts without them).
#include "checksum_impl.h"

#include <cstring>

#ifdef CSD_HAVE_ISAL
#include <isa-l/crc.h>
#endif
#ifdef CSD_HAVE_XXHASH
#include <xxhash.h>
#endif

namespace csd {

#ifdef CSD_HAVE_ISAL
uint32_t crc32c(const uint8_t *data, uint64_t len)
{
    uint32_t crc = 0xFFFFFFFFu;
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

uint32_t crc32c(const uint8_t *data, uint64_t len)
{
    static const Crc32cTable tab;
    uint32_t crc = 0xFFFFFFFFu;
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

#ifdef CSD_HAVE_XXHASH
uint64_t xxh64(const uint8_t *data, uint64_t len) { return XXH64(data, len, 0); }
#else
namespace {
constexpr uint64_t P1 = 11400714785074694791ull, P2 = 14029467366897019727ull,
                   P3 = 1609587929392839161ull, P4 = 9650029242287828579ull,
                   P5 = 2870177450012600261ull;
inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t rd64(const uint8_t *p) { uint64_t v; std::memcpy(&v, p, 8); return v; }
inline uint32_t rd32(const uint8_t *p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
inline uint64_t round1(uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; }
inline uint64_t merge(uint64_t acc, uint64_t v) { return (acc ^ round1(0, v)) * P1 + P4; }
}  // namespace

uint64_t xxh64(const uint8_t *p, uint64_t len)
{
    const uint8_t *end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = 0 - P1;
        do {
            v1 = round1(v1, rd64(p));
            v2 = round1(v2, rd64(p + 8));
            v3 = round1(v3, rd64(p + 16));
            v4 = round1(v4, rd64(p + 24));
            p += 32;
        } while (end - p >= 32);
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
        h = merge(h, v1);
        h = merge(h, v2);
        h = merge(h, v3);
        h = merge(h, v4);
    } else {
        h = P5;
    }
    h += len;
    while (end - p >= 8) {
        h ^= round1(0, rd64(p));
        h = rotl(h, 27) * P1 + P4;
        p += 8;
    }
    if (end - p >= 4) {
        h ^= rd32(p) * P1;
        h = rotl(h, 23) * P2 + P3;
        p += 4;
    }
    while (p < end) {
        h ^= *p++ * P5;
        h = rotl(h, 11) * P1;
    }
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}
#endif

}  // namespace csd
