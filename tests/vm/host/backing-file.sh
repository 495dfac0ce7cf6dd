#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Host side of a guest test: the namespace's backing file holds bytes with the given
# SHA-256 at OFFSET, LENGTH. Usage: backing-file.sh OFFSET LENGTH SHA256
set -euo pipefail
off=$1 len=$2 want=$3
have=$(dd if="$CSD_DISK" iflag=skip_bytes,count_bytes skip="$off" count="$len" bs=1M status=none | sha256sum | cut -d" " -f1)
if [ "$have" != "$want" ]; then
    echo "backing-file: $CSD_DISK [$off, +$len) has sha256 $have, guest wrote $want" >&2
    exit 1
fi
