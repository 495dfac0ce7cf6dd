#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/vm/drive_scaling.py in one guest with four CSD controllers (docs/perf.md, "Several drives").
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '# vm: csd=on slm=64M drives=4 memory=2G timeout=900\npython3 /csd/bench/drive_scaling.py\n' > "$tmp/drive-scaling.sh"
python3 "$top/tests/vm/csdvm.py" test --dir "$tmp" drive-scaling.sh
