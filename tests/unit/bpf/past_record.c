// SPDX-License-Identifier: MIT
/* Rejected for 16-byte records: reads byte 100. */
#include "csd_bpf.h"

CSD_PROGRAM u64 past_record(const u8 *record)
{
	return record[100];
}
