// SPDX-License-Identifier: MIT
// crc32c.cc - CRC-32C over ISA-L where the build found it (CSD_HAVE_ISAL); else, on x86-64,
// picked at run time: carry-less multiplication folding 512-bit blocks (AVX-512 with
// VPCLMULQDQ), or the crc32 instruction on three interleaved streams (SSE4.2); else a
// portable slicing-by-8 version. CSD_CRC32C_NO_VPCLMUL and CSD_CRC32C_NO_HW leave the
// faster ones out, so that tests can check each against the same vectors. And the
// combination of two CRCs, which needs no data.
#include "csd_crc32c.h"

#include <cstring>

#ifdef CSD_HAVE_ISAL
#include <isa-l/crc.h>
#endif

#if !defined(CSD_HAVE_ISAL) && !defined(CSD_CRC32C_NO_HW) && defined(__x86_64__) && defined(__GNUC__)
#define CSD_CRC32C_HW 1
#include <immintrin.h>
#ifndef CSD_CRC32C_NO_VPCLMUL
#define CSD_CRC32C_VPCLMUL 1
#endif
#endif

namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // x^32 + ... (Castagnoli), bit-reflected

// a * b modulo the polynomial, both bit-reflected (bit 31 is x^0), as zlib's crc32_combine.
uint32_t multmodp(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ kPoly : b >> 1;
    }
    return p;
}

// x^(2^k) modulo the polynomial for k = 0 .. 66 (enough for lengths up to 2^64 bytes).
struct PowersOfX {
    uint32_t x2n[67];
    PowersOfX()
    {
        uint32_t p = 1u << 30;  // x^1
        x2n[0] = p;
        for (int k = 1; k < 67; k++) x2n[k] = p = multmodp(p, p);
    }
};

// x^(8 n) modulo the polynomial: what appending n zero bytes multiplies a CRC register by.
uint32_t x8n(uint64_t n)
{
    static const PowersOfX pw;
    uint32_t p = 1u << 31;  // x^0
    for (unsigned k = 3; n; n >>= 1, k++) {
        if (n & 1) p = multmodp(pw.x2n[k], p);
    }
    return p;
}

}  // namespace

uint32_t csd_crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2)
{
    return multmodp(x8n(len2), crc1) ^ crc2;
}

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

#ifdef CSD_CRC32C_HW
// Appends a fixed number of zero bytes to a CRC register: one table lookup per byte.
struct ZerosOperator {
    uint32_t t[4][256];
    explicit ZerosOperator(uint64_t bytes)
    {
        const uint32_t op = x8n(bytes);
        for (int k = 0; k < 4; k++) {
            for (uint32_t b = 0; b < 256; b++) t[k][b] = multmodp(op, b << (8 * k));
        }
    }
    uint32_t operator()(uint32_t crc) const
    {
        return t[0][crc & 0xFF] ^ t[1][(crc >> 8) & 0xFF] ^ t[2][(crc >> 16) & 0xFF] ^ t[3][crc >> 24];
    }
};

uint64_t load64(const uint8_t *p)
{
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
}

// The crc32 instruction has a latency of three cycles and a throughput of one: three
// streams over adjacent blocks keep it busy, and their registers are then combined by
// shifting each over the blocks after it (as in Mark Adler's crc32c.c).
template <uint64_t kBlock>
__attribute__((target("sse4.2"))) const uint8_t *crc32c_hw_blocks(uint64_t *crc, const uint8_t *p, uint64_t *len)
{
    static const ZerosOperator shift(kBlock);
    uint64_t c0 = *crc;
    while (*len >= 3 * kBlock) {
        uint64_t c1 = 0, c2 = 0;
        for (const uint8_t *end = p + kBlock; p < end; p += 8) {
            c0 = _mm_crc32_u64(c0, load64(p));
            c1 = _mm_crc32_u64(c1, load64(p + kBlock));
            c2 = _mm_crc32_u64(c2, load64(p + 2 * kBlock));
        }
        c0 = shift(static_cast<uint32_t>(c0)) ^ c1;
        c0 = shift(static_cast<uint32_t>(c0)) ^ c2;
        p += 2 * kBlock;
        *len -= 3 * kBlock;
    }
    *crc = c0;
    return p;
}

// The rest of a buffer, 8 bytes at a time, into a raw CRC register.
__attribute__((target("sse4.2"))) uint32_t crc32c_hw_tail(uint64_t crc, const uint8_t *p, uint64_t len)
{
    for (; len >= 8; len -= 8, p += 8) crc = _mm_crc32_u64(crc, load64(p));
    for (; len; len--) crc = _mm_crc32_u8(static_cast<uint32_t>(crc), *p++);
    return static_cast<uint32_t>(crc);
}

__attribute__((target("sse4.2"))) uint32_t crc32c_hw(uint32_t prev, const uint8_t *p, uint64_t len)
{
    uint64_t crc = prev ^ 0xFFFFFFFFu;
    for (; len && (reinterpret_cast<uintptr_t>(p) & 7); len--) crc = _mm_crc32_u8(static_cast<uint32_t>(crc), *p++);
    p = crc32c_hw_blocks<8192>(&crc, p, &len);
    p = crc32c_hw_blocks<256>(&crc, p, &len);
    return crc32c_hw_tail(crc, p, len) ^ 0xFFFFFFFFu;
}

#ifdef CSD_CRC32C_VPCLMUL
#define CSD_TARGET_FOLD "avx512f,avx512vl,avx512bw,vpclmulqdq,pclmul,sse4.2"

// What carry-less multiplication folds 128 bits of data over `bits` bits further on by:
// x^(bits+32) for its first (low) 64 bits, x^(bits-32) for its last, modulo the
// polynomial, bit-reflected and shifted left one (PCLMULQDQ's product of reflected
// operands is one bit short), as in Intel's "Fast CRC Computation Using PCLMULQDQ".
__attribute__((target(CSD_TARGET_FOLD))) __m128i fold_constants(uint64_t bits)
{
    return _mm_set_epi64x(static_cast<long long>(uint64_t{x8n((bits - 32) / 8)} << 1),
                          static_cast<long long>(uint64_t{x8n((bits + 32) / 8)} << 1));
}

__attribute__((target(CSD_TARGET_FOLD))) __m128i fold128(__m128i x, __m128i k, __m128i next)
{
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}

__attribute__((target(CSD_TARGET_FOLD))) __m512i fold512(__m512i x, __m512i k, __m512i next)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11), next,
                                     0x96);  // a ^ b ^ c
}

// The same 128 bits in each of four lanes.
__attribute__((target(CSD_TARGET_FOLD))) __m512i lanes(__m128i k)
{
    const long long lo = _mm_cvtsi128_si64(k), hi = _mm_extract_epi64(k, 1);
    return _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
}

struct FoldConstants {
    __m128i k2048, k512, k384, k256, k128;
};

// Four 512-bit accumulators fold 256 bytes a step; they are folded into one, its four
// 128-bit lanes into one, and those 16 bytes run through the crc32 instruction from a zero
// register, which gives the CRC of everything folded (the register the data started from
// was XORed into its first four bytes); the last bytes follow one instruction at a time.
__attribute__((target(CSD_TARGET_FOLD))) uint32_t crc32c_fold(uint32_t prev, const uint8_t *p, uint64_t len)
{
    uint32_t crc = prev ^ 0xFFFFFFFFu;
    if (len >= 256) {
        static const FoldConstants c{fold_constants(2048), fold_constants(512), fold_constants(384),
                                     fold_constants(256), fold_constants(128)};
        const __m512i k2048 = lanes(c.k2048), k512 = lanes(c.k512);
        __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, crc));
        __m512i x1 = _mm512_loadu_si512(p + 64), x2 = _mm512_loadu_si512(p + 128), x3 = _mm512_loadu_si512(p + 192);
        for (p += 256, len -= 256; len >= 256; p += 256, len -= 256) {
            x0 = fold512(x0, k2048, _mm512_loadu_si512(p));
            x1 = fold512(x1, k2048, _mm512_loadu_si512(p + 64));
            x2 = fold512(x2, k2048, _mm512_loadu_si512(p + 128));
            x3 = fold512(x3, k2048, _mm512_loadu_si512(p + 192));
        }
        x1 = fold512(x0, k512, x1);
        x2 = fold512(x1, k512, x2);
        x3 = fold512(x2, k512, x3);
        for (; len >= 64; p += 64, len -= 64) x3 = fold512(x3, k512, _mm512_loadu_si512(p));
        __m128i lane[4];
        _mm512_storeu_si512(lane, x3);
        __m128i r = fold128(lane[0], c.k384, lane[3]);
        r = fold128(lane[1], c.k256, r);
        r = fold128(lane[2], c.k128, r);
        crc = crc32c_hw_tail(0, reinterpret_cast<const uint8_t *>(&r), 16);
    }
    return crc32c_hw_tail(crc, p, len) ^ 0xFFFFFFFFu;
}
#endif

using Crc32cFn = uint32_t (*)(uint32_t, const uint8_t *, uint64_t);

// The fastest CRC-32C this processor runs (nullptr: the table).
Crc32cFn best_hw()
{
    __builtin_cpu_init();
#ifdef CSD_CRC32C_VPCLMUL
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("vpclmulqdq") &&
        __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2")) {
        return crc32c_fold;
    }
#endif
    return __builtin_cpu_supports("sse4.2") ? crc32c_hw : nullptr;
}
#endif

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
#ifdef CSD_CRC32C_HW
    static const Crc32cFn hw = best_hw();
    if (hw) return hw(prev, data, len);
#endif
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
