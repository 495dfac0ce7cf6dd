#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks of tests/run_all.py itself: a suite is credited only with its own closing line,
a crashed runner fails, skips are reported. Prints 'runner: N passed, N failed'."""
import contextlib
import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_all  # noqa: E402

passed = failed = 0


def check(ok, what):
    global passed, failed
    passed, failed = passed + ok, failed + (not ok)
    print(("ok   " if ok else "FAIL ") + what)


def suite(script):
    """run_all's verdict on a fake suite named 'x' whose runner is this shell script (its
    own output is kept out of this suite's, so no fake closing line reaches the log)."""
    return quiet(lambda: run_all.run_suite("x", ["sh", "-c", script]))[:3]


def quiet(f):
    with contextlib.redirect_stdout(io.StringIO()):
        return f()


# A guest program's own count printed after the suite's closing line must not win.
check(suite("echo 'x: 3 passed, 0 failed'; echo 'c-api: 22 passed, 0 failed'") == (3, 0, 0),
      "a nested program's count printed last is not the suite's")
check(suite("echo '    c-api: 22 passed, 0 failed'; echo '99 passed, 0 failed'") == (0, 1, 0),
      "a suite with only other programs' counts has no closing line: failed")
check(suite("echo 'x: 3 passed, 0 failed'; exit 3") == (3, 1, 0), "a runner that exits non-zero fails")
check(suite("exit 0") == (0, 1, 0), "a runner that prints nothing fails")
check(suite("echo 'x: 5 passed, 0 failed, 2 skipped'") == (5, 0, 2), "skipped tests are reported as skipped")
check(suite("echo 'x: 5 passed, 1 failed'; exit 1") == (5, 1, 0), "failures are counted once")
check(quiet(lambda: run_all.run_suite("x", ["/nonexistent/runner"]))[:3] == (0, 1, 0),
      "a runner that cannot start fails")


def run_main(suites, lanes, argv):
    """run_all.main() over fake suites, some in lanes of their own: (exit, output lines, seconds)."""
    saved = run_all.SUITES, run_all.LANES, sys.argv
    run_all.SUITES, run_all.LANES, sys.argv = suites, lanes, ["run_all.py", *argv]
    out = io.StringIO()
    start = time.monotonic()
    try:
        with contextlib.redirect_stdout(out):
            rc = run_all.main()
    finally:
        run_all.SUITES, run_all.LANES, sys.argv = saved
    return rc, out.getvalue().splitlines(), time.monotonic() - start


rc, lines, _ = run_main({"a": ["sh", "-c", "sleep 0.3; echo 'a: 1 passed, 0 failed'"],
                         "b": ["sh", "-c", "echo b-first; echo 'b: 2 passed, 1 failed'; exit 1"]},
                        {"b": "other"}, ["a", "b"])
check(rc == 1 and lines[-1] == "3 passed, 1 failed, 0 skipped", "a suite run in another lane is counted (closing line last)")
b_out = [i for i, line in enumerate(lines) if line.startswith(("===== b:", "b-first", "b: "))]
check(len(b_out) == 4 and b_out == list(range(b_out[0], b_out[0] + 4)),
      "the output of a suite run beside another is printed whole, not interleaved")
sleeper = ["sh", "-c", "sleep 1; echo \"$0: 1 passed, 0 failed\""]
rc, lines, took = run_main({"g": sleeper[:2] + [sleeper[2], "g"], "h": sleeper[:2] + [sleeper[2], "h"],
                            "i": sleeper[:2] + [sleeper[2], "i"]}, {"g": "guests"}, ["g", "h", "i"])
check(rc == 0 and lines[-1] == "3 passed, 0 failed, 0 skipped" and 1.9 < took < 2.8,
      f"lanes run side by side, the suites of one lane in turn (three 1 s suites, two lanes: {took:.1f} s)")
# The summary names each failed test (a CI log keeps only its tail), and no passing one.
rc, lines, _ = run_main({"u": ["sh", "-c", "echo '[  FAILED  ] Stream.Flaky (3 ms)'; echo '[  FAILED  ] 1 test, listed below:';"
                                      " echo '[  FAILED  ] Stream.Flaky'; echo 'FAIL timing-model.sh (3.0 s)';"
                                      " echo '[       OK ] Stream.Fine'; echo 'u: 5 passed, 2 failed'; exit 1"],
                         "v": ["sh", "-c", "echo '[  FAILED  ] Other.Test'; echo 'v: 1 passed, 0 failed'"]},
                        {}, ["u", "v"])
named = [line for line in lines if line.startswith("  failed in ")]
check(rc == 1 and named == ["  failed in u: [  FAILED  ] Stream.Flaky (3 ms)", "  failed in u: [  FAILED  ] Stream.Flaky",
                            "  failed in u: FAIL timing-model.sh (3.0 s)"] and lines[-1].startswith("6 passed, 2 failed"),
      f"the summary names the failed tests of failed suites only: {named}")
print(f"runner: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
