// SPDX-License-Identifier: MIT
/* Map: one u64 per record, the 32-bit field at byte 4 times params[0] plus the record's index. */
#include "csd_bpf.h"

CSD_PROGRAM u64 project(const void *record)
{
	u32 field = *(const u32 *)((const u8 *)record + 4);

	return (u64)field * csd_param(0) + csd_index();
}
