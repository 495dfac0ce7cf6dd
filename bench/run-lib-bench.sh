#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libcsd in the guest: Execute throughput (4 KiB copy) at queue depth 1, 8, 32 over io_uring
# against synchronous ioctl, and the latency of a 4 KiB copy Execute against a 4 KiB Read.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
exec python3 "$top/tests/vm/csdvm.py" cmd "csdctl bench --seconds 3; csdctl --uring bench --seconds 3"
