#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Boot time: from QEMU's start to the first guest test (shell), and to numpy imported.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
for i in 1 2 3; do
    s=$(date +%s.%N)
    python3 "$top/tests/vm/csdvm.py" cmd 'true' > /dev/null
    e=$(date +%s.%N)
    s2=$(date +%s.%N)
    python3 "$top/tests/vm/csdvm.py" cmd 'python3 -c "import numpy"' > /dev/null
    e2=$(date +%s.%N)
    printf 'run %d: boot, run a shell command, power off: %.2f s; the same with numpy imported: %.2f s\n' \
        "$i" "$(echo "$e - $s" | bc)" "$(echo "$e2 - $s2" | bc)"
done
python3 "$top/tests/vm/csdvm.py" test io-basic.sh 2>&1 | grep 'first test after'
