#!/usr/bin/env bash
# Host side of the peer-to-peer test: the ivshmem peer's memory file (the BAR the drive
# wrote into) starts with LEN bytes of the pattern (i * 31 + 7) & 0xff.
set -euo pipefail
len=$1
python3 - "$CSD_WORKDIR/peer.mem" "$len" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
got = open(path, "rb").read(n)
want = bytes((i * 31 + 7) & 0xFF for i in range(n))
if got != want:
    bad = next(i for i in range(n) if got[i] != want[i])
    sys.exit(f"peer memory differs from the SLM pattern at byte {bad}")
PY
