// SPDX-License-Identifier: MIT
/* Rejected: the entry function is not in section csd. */
#include "csd_bpf.h"

u64 plain(const u8 *record)
{
	return record[0];
}
