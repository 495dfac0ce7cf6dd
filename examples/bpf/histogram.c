// SPDX-License-Identifier: MIT
/*
 * Reduce: how many records have their signed 32-bit key (at byte 0) in the bucket
 * [params[0], params[1]); run once per bucket, or sum the keys with params[2] = 1.
 */
#include "csd_bpf.h"

CSD_PROGRAM u64 histogram(const void *record)
{
	s64 key = *(const s32 *)record;

	if (csd_param(2))
		return (u64)key;
	return key >= (s64)csd_param(0) && key < (s64)csd_param(1);
}
