// SPDX-License-Identifier: MIT
/*
 * Filter over text records (a NUL-padded string at byte 0, 8 bytes or more): keep those
 * that start with a prefix of params[1] bytes (1..8) given in params[0], first byte in
 * its low byte. The comparison is unrolled: eBPF programs may not loop.
 */
#include "csd_bpf.h"

#define BYTE_MATCHES(i) ((n <= (i)) || (r[i] == (u8)(prefix >> (8 * (i)))))

CSD_PROGRAM u64 prefix_match(const void *record)
{
	const u8 *r = record;
	u64 prefix = csd_param(0);
	u64 n = csd_param(1);

	return BYTE_MATCHES(0) && BYTE_MATCHES(1) && BYTE_MATCHES(2) && BYTE_MATCHES(3) &&
	       BYTE_MATCHES(4) && BYTE_MATCHES(5) && BYTE_MATCHES(6) && BYTE_MATCHES(7);
}
