#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs every nvme-csd test suite (in lanes side by side, LANES below), and prints the total
as 'N passed, N failed, N skipped'. Usage: tests/run_all.py [SUITE ...] (default: all).

A suite is credited only with its own closing line, 'NAME: N passed, N failed' (optionally
', N skipped') at the start of a line: counts that programs inside it print (a guest
test's pytest, the C API test) are theirs, not the suite's. A suite with no such line, or
one that exits non-zero while claiming no failure, counts as failed."""

import builtins
import io
import os
import re
import subprocess
import threading
import sys
import time
from pathlib import Path

TOP = Path(__file__).resolve().parents[1]

# name -> command (run from the top of the tree); each prints its own closing line.
SUITES = {
    "unit": ["tests/unit/run-unit.sh"],
    # Short budgets: every kept regression replayed plus a little exploration; long
    # campaigns are `make fuzz` (FUZZ_SECONDS).
    "fuzz": ["tests/fuzz/run-fuzz.sh", "15"],
    "qemu-fuzz": ["tests/fuzz/run-qemu-fuzz.sh", "30"],
    "qtest": ["qemu-device/qtest/run-qtests.sh"],
    "kmod-style": ["kmod/check-style.sh"],
    "harness": ["tests/vm/selftest.sh"],
    "runner": [sys.executable, "tests/test_run_all.py"],
    "repo": [sys.executable, "tests/repo/run-repo.py"],
    "python": ["python/run-tests.sh"],
    "vm": [sys.executable, "tests/vm/csdvm.py", "test"],
    "crash": [sys.executable, "tests/vm/crash_store.py"],
}
# Suites that `make test` does not run: `make check`'s smoke (its tests are in a suite
# above), `make test-deb`'s packages and `make test-fresh`'s fresh machine.
EXTRA_SUITES = {
    "smoke": [sys.executable, "tests/vm/csdvm.py", "test", "--suite-name", "smoke", "csd-recipes.sh"],
    # make deb's packages installed in a fresh Debian 12 root (root; make test-deb)
    "packages": ["tests/packages/test-packages.sh"],
    # the README's first ten minutes as written in a fresh Debian 12 root (root; make test-fresh)
    "fresh": ["tests/fresh/readme-first-ten-minutes.sh"],
}
CHECK = ["repo", "unit", "qtest", "python", "smoke"]
# Suites asked for together run in lanes, side by side: the suites that boot guests in one,
# one after another (their guests keep the cores busy), the host suites in another (most of
# them keep one core busy, or wait), the harness self-test in its own (it mostly waits out
# timeouts). The guests' lane streams its output; every other suite's output is printed
# whole when it ends.
LANES = {"vm": "guests", "crash": "guests", "smoke": "guests", "packages": "guests", "fresh": "guests",
         "harness": "harness"}
STREAMING_LANE = "guests"
CPU: dict[str, float] = {}   # CPU seconds each suite run so far took (its processes, all cores)
FAILED_LINES: dict[str, list[str]] = {}  # lines naming a failed test, per suite (the summary repeats them)
# A line naming one failed test: GoogleTest's, pytest's, the guest harness's, a shell suite's.
FAILED_TEST = re.compile(r"^(\[  FAILED  \] (?!\d+ tests?, listed below)\S.*|FAILED \S.*|FAIL \S.*|"
                         r"\S+: FAIL\b.*|not ok \d+.*)$")
KEPT_FAILED_LINES = 20


def closing_line(name: str) -> "re.Pattern[str]":
    """The suite's own closing line: 'NAME: N passed, N failed[, N skipped]' starting a line."""
    return re.compile(rf"^{re.escape(name)}: (\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$")


def wait_cpu(proc: subprocess.Popen) -> tuple[int, float]:
    """Waits for proc to end: (exit status, CPU seconds, user and system, that it and the
    processes it waited for used): how much of the machine a suite took, whatever else ran."""
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, ru.ru_utime + ru.ru_stime


def run_suite(name: str, argv: list[str], print=print) -> tuple[int, int, int, float]:
    """Runs one suite, echoing its output (through print); returns (passed, failed, skipped,
    seconds), and keeps its CPU seconds in CPU[name]."""
    print(f"===== {name}: {' '.join(argv)}", flush=True)
    start = time.monotonic()
    closing = closing_line(name)
    try:
        proc = subprocess.Popen(argv, cwd=TOP, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        print(f"===== {name}: cannot start ({e}); counted as a failure")
        return 0, 1, 0, 0.0
    last = None
    failed_lines = FAILED_LINES.setdefault(name, [])
    assert proc.stdout
    for line in proc.stdout:
        print(line, end="", flush=True)
        if FAILED_TEST.match(line.rstrip("\n")) and line.rstrip("\n") not in failed_lines \
                and len(failed_lines) < KEPT_FAILED_LINES:
            failed_lines.append(line.rstrip("\n"))
        m = closing.match(line)
        if m:
            last = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
    rc, CPU[name] = wait_cpu(proc)
    took = time.monotonic() - start
    if last is None:
        last = (0, 1, 0)
        print(f"===== {name}: no closing line of its own (exit {rc}); counted as a failure")
    elif rc != 0 and last[1] == 0:
        last = (last[0], 1, last[2])
        print(f"===== {name}: exit {rc} with no failed test; counted as a failure")
    print(f"===== {name}: {last[0]} passed, {last[1]} failed, {last[2]} skipped in {took:.0f} s "
          f"(CPU {CPU[name]:.0f} s)", flush=True)
    return last[0], last[1], last[2], took


def run_lanes(wanted: list[str], known: dict[str, list[str]]) -> dict[str, tuple[int, int, int, float]]:
    """Runs the wanted suites, each lane's in turn and the lanes side by side (LANES); returns
    each suite's (passed, failed, skipped, seconds)."""
    results: dict[str, tuple[int, int, int, float]] = {}
    lanes: dict[str, list[str]] = {}
    for name in wanted:
        lanes.setdefault(LANES.get(name, "host"), []).append(name)
    streaming = STREAMING_LANE if STREAMING_LANE in lanes else next(iter(lanes))
    lock = threading.Lock()

    def live(*a, **k) -> None:
        with lock:
            builtins.print(*a, **{**k, "flush": True})

    def lane(names: list[str], stream: bool) -> None:
        for name in names:
            if stream or len(lanes) == 1:
                results[name] = run_suite(name, known[name], print=live)
                continue
            buf = io.StringIO()
            results[name] = run_suite(name, known[name], print=lambda *a, **k: builtins.print(
                *a, **{**k, "file": buf, "flush": False}))
            with lock:
                builtins.print(buf.getvalue(), end="", flush=True)

    threads = [threading.Thread(target=lane, args=(names, key == streaming), daemon=True)
               for key, names in lanes.items()]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return results


def main() -> int:
    known = {**SUITES, **EXTRA_SUITES}
    wanted = sys.argv[1:] or list(SUITES)
    if wanted == ["check"]:
        wanted = CHECK
    unknown = [w for w in wanted if w not in known]
    if unknown:
        print(f"run_all: unknown suite(s) {unknown}; known: {list(known)} or 'check'", file=sys.stderr)
        return 2
    total_p = total_f = total_s = 0
    summary = []
    start = time.monotonic()
    results = run_lanes(wanted, known)
    for name in wanted:
        p, f, s, t = results.get(name, (0, 1, 0, 0.0))
        total_p += p
        total_f += f
        total_s += s
        summary.append(f"  {name:10s} {p:4d} passed {f:4d} failed {s:4d} skipped {t:6.0f} s {CPU.get(name, 0):6.0f} s CPU"
                       + (f"  (lane {LANES.get(name, 'host')})" if len(wanted) > 1 else ""))
    print(f"===== summary ({time.monotonic() - start:.0f} s in all, {sum(CPU.values()):.0f} s CPU; "
          f"load average {os.getloadavg()[0]:.1f} at the end)")
    print("\n".join(summary))
    for name in wanted:  # which tests failed, where a log's tail is all that is kept (CI)
        if results.get(name, (0, 1))[1]:
            for line in FAILED_LINES.get(name) or ["(no line of it names a failed test: see its output above)"]:
                print(f"  failed in {name}: {line}")
    print(f"{total_p} passed, {total_f} failed, {total_s} skipped")
    return 1 if total_f else 0


if __name__ == "__main__":
    sys.exit(main())
