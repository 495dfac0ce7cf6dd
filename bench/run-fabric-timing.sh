#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/vm/fabric_timing.py: one drive local, over NVMe/TCP on the guest's loopback, and a
# partner guest's drive over a QEMU stream netdev (docs/perf.md, "Over a fabric").
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/fabric-timing.sh" <<'GUEST'
# vm: csd=on slm=64M alone partner=fabric-target.sh memory=2G timeout=900
. /csd/tests/lib.sh
fabric_modules
fabric_link 10.99.0.2
fabric_export /dev/nvme0 127.0.0.1 1
loop=$(fabric_connect 127.0.0.1 5 1 csd0001)
remote=$(fabric_connect 10.99.0.1 180 2 csd0101)
echo "round trip to the partner guest: $(ping -c 5 -q 10.99.0.1 | tail -1)"
cd /csd/bench
python3 fabric_timing.py local=$(nvm_ng):lo loopback=$loop:lo remote=$remote:eth0
GUEST
python3 "$top/tests/vm/csdvm.py" test --dir "$tmp" fabric-timing.sh
