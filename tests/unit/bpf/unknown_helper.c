// SPDX-License-Identifier: MIT
/* Rejected: calls a helper the device does not offer. */
#include "csd_bpf.h"

extern u64 csd_time(void);

CSD_PROGRAM u64 uses_time(const u8 *record)
{
	return csd_time() + record[0];
}
