#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Exact mode's cost (docs/timing-model.md, docs/perf.md): wall-clock time of a guest's boot
# and of fio 4 KiB random reads at QD1 and QD32, SLM transfers and gemm (bench/vm/
# exact_phases.py) under a timing model, free-running TCG against csd.exact=on and against
# csd.exact=on with -icount shift=0, side by side in one run; LOAD=N runs N busy loops
# beside it. Usage: bench/run-exact-cost.sh [PRESET] (default gen4x4-8core).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
preset=${1:-gen4x4-8core}
load=${LOAD:-0}
pids=()
for _ in $(seq "$load"); do (while :; do :; done) & pids+=($!); done
trap '[ ${#pids[@]} = 0 ] || kill "${pids[@]}" 2>/dev/null' EXIT
PRESET=$preset python3 - "$top" <<'PY'
import os, subprocess, sys, time
top = sys.argv[1]
runs = [("free-running TCG", []), ("exact", ["--exact"]), ("exact + icount 0", ["--exact", "--icount", "0"])]
rows = {}
for name, flags in runs:
    argv = [sys.executable, f"{top}/tests/vm/csdvm.py", "cmd", "python3 /csd/bench/exact_phases.py",
            "--device-props", f"csd.model={os.environ['PRESET']}", "--timeout", "900", *flags]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    marks, first, extra = {}, None, ""
    for line in p.stdout:
        now = time.monotonic()
        if "@@PHASE" in line:
            _, what, label = line.split("@@PHASE ", 1)[1].strip().partition(" ")[0], None, line.split("@@PHASE ", 1)[1].strip().split(" ", 1)[1]
            kind = line.split("@@PHASE ", 1)[1].split()[0]
            first = first or now
            marks.setdefault(label, {})[kind] = now
        elif "@@STATS" in line:
            extra = line.split("@@STATS ", 1)[1].strip()
    p.wait()
    if p.returncode:
        sys.exit(f"exact-cost: {name}: the guest failed (exit {p.returncode})")
    r = {"boot": first - t0}
    r.update({k: v["end"] - v["begin"] for k, v in marks.items()})
    rows[name] = (r, extra)
print(f"exact mode's cost, preset {os.environ['PRESET']}, wall-clock seconds (load {os.environ.get('LOAD', '0')}):")
names = list(rows)
print(f"{'phase':30s}" + "".join(f"{n:>22s}" for n in names))
for k in rows[names[0]][0]:
    base = rows[names[0]][0][k]
    print(f"{k:30s}" + "".join(f"{rows[n][0][k]:13.2f} ({rows[n][0][k] / base:4.2f}x)" for n in names))
for n in names:
    print(f"  {n}: C1h {rows[n][1]}")
PY
