// SPDX-License-Identifier: MIT
// XXH64 over libxxhash where the build found it (CSD_HAVE_XXHASH), else a portable
// version (for hosts without it). CRC-32C lives with the wire format (spec/crc32c.cc).
#include "checksum_impl.h"

#include <algorithm>
#include <memory>
#include <new>

#include "../program.h"

#include <cstring>

#ifdef CSD_HAVE_XXHASH
#include <xxhash.h>
#endif

namespace csd::core {

#ifdef CSD_HAVE_XXHASH
bool xxh64(const uint8_t *data, uint64_t len, const int *cancel, uint64_t *out)
{
    std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t *)> st(XXH64_createState(), XXH64_freeState);
    if (!st) throw std::bad_alloc();
    XXH64_reset(st.get(), 0);
    for (uint64_t done = 0; done < len; done += kCancelBytes) {
        if (cancelled(cancel)) return false;
        XXH64_update(st.get(), data + done, std::min(kCancelBytes, len - done));
    }
    *out = XXH64_digest(st.get());
    return true;
}
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

bool xxh64(const uint8_t *p, uint64_t len, const int *cancel, uint64_t *out)
{
    const uint8_t *end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = 0 - P1;
        uint64_t stripes = 0;
        do {
            if ((++stripes & (kCancelBytes / 32 - 1)) == 0 && cancelled(cancel)) return false;
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
    *out = h;
    return true;
}
#endif

}  // namespace csd::core
