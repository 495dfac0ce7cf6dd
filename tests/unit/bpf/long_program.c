// SPDX-License-Identifier: MIT
/* Accepted: a program near the device's 65536-instruction limit (straight-line code, no
 * loop), for the cancellation test: every record costs about 50,000 instructions. */
#include "csd_bpf.h"

#define STEP h = (h ^ (h >> 7)) * 0x100000001b3ull;
#define X4(s) s s s s
#define X10(s) s s s s s s s s s s
#define X1000(s) X10(X10(X10(s)))

CSD_PROGRAM u64 long_program(const u8 *record)
{
	u64 h = record[0];

	X4(X1000(STEP)) X4(X1000(STEP)) X4(X1000(STEP))
	return h;
}
