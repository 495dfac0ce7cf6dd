#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Host side of the peer-to-peer test: the ivshmem peer's memory file (the BAR the drive
# wrote into) holds, from byte OFFSET (default 0), LEN bytes of the pattern
# (i * MUL + ADD) & 0xff (default MUL 31, ADD 7: the first tenant's).
set -euo pipefail
len=$1 off=${2:-0} mul=${3:-31} add=${4:-7}
python3 - "$CSD_WORKDIR/peer.mem" "$len" "$off" "$mul" "$add" <<'PY'
import sys
path, n, off, mul, add = sys.argv[1], *map(int, sys.argv[2:])
with open(path, "rb") as f:
    f.seek(off)
    got = f.read(n)
want = bytes((i * mul + add) & 0xFF for i in range(n))
if got != want:
    bad = next((i for i in range(min(n, len(got))) if got[i] != want[i]), len(got))
    sys.exit(f"peer memory at {off} differs from the SLM pattern at byte {off + bad}")
PY
