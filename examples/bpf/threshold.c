// SPDX-License-Identifier: MIT
/* Filter: keep records whose signed 32-bit key (at byte 0) is greater than params[0]. */
#include "csd_bpf.h"

CSD_PROGRAM u64 threshold(const void *record)
{
	s32 key = *(const s32 *)record;

	return (s64)key > (s64)csd_param(0);
}
