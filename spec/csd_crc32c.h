/* SPDX-License-Identifier: MIT */
/*
 * csd_crc32c.h - CRC-32C (Castagnoli, reflected, init and final xor FFFFFFFFh; check
 * value of "123456789" is E3069283h), as the checksum program (08h) computes it and as
 * the object store protects its catalog and objects: one implementation for both.
 */
#ifndef CSD_CRC32C_H
#define CSD_CRC32C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CRC-32C of len bytes (ISA-L where the build found it, else slicing-by-8). */
uint32_t csd_crc32c(const void *data, uint64_t len);

/* CRC-32C of some bytes whose CRC-32C is prev followed by these len bytes (0 for none). */
uint32_t csd_crc32c_extend(uint32_t prev, const void *data, uint64_t len);

/* CRC-32C of A followed by B, from crc1 = CRC-32C of A, crc2 = CRC-32C of B and B's length:
 * pieces checked on several threads give the CRC of the whole without a second pass. */
uint32_t csd_crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);

#ifdef __cplusplus
}
#endif

#endif /* CSD_CRC32C_H */
