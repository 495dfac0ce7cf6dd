// SPDX-License-Identifier: MIT
// CRC-32C computed bit by bit from its definition (reflected polynomial 82F63B78h): the
// independent reference the CRC tests hold every implementation to.
#pragma once
#include <cstddef>
#include <cstdint>

// CRC-32C of n bytes at p, one bit at a time.
inline uint32_t crc32c_bitwise(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFF;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78 & (0 - (c & 1)));
    }
    return ~c;
}
