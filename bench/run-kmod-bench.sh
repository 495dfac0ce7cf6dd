#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The cost of going through csd.ko against raw ioctl passthrough, in one guest: 4 KiB copy
# Executes and a 16 MiB SLM Read.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
exec python3 "$top/tests/vm/csdvm.py" cmd "insmod /csd/kmod/csd.ko && \
    csdctl -d /dev/ng0n1 bench --seconds 3 && csdctl -d /dev/csd0?slm=32M bench --seconds 3"
