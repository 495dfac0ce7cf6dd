#!/usr/bin/env python3
"""Crash consistency of the object store: QEMU is killed (SIGKILL) at many points while
the guest puts, overwrites and removes objects; after each kill a fresh QEMU boots on
the same backing file and checks that the store opens and that every acknowledged
update is there, byte for byte. Prints 'crash: N passed, N failed'."""

import os
import queue
import zlib
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import csdvm  # noqa: E402


# Guest side: a stream of updates, each acknowledged only after csdctl returned.
WRITER = r'''
import os, random, subprocess, sys, zlib
start = int(sys.argv[1])
for i in range(start, start + 10000):
    name = f"obj{i % 23}"
    if i % 7 == 3:
        r = subprocess.run(["csdctl", "rm", name], capture_output=True)
        print(f"ACK rm {name} {i}" if r.returncode == 0 else f"NOOP rm {name} {i}", flush=True)
        continue
    size = (i * 7919) % 300000 + 1
    data = random.Random(i).randbytes(size)
    open("/tmp/d", "wb").write(data)
    r = subprocess.run(["csdctl", "put", name, "/tmp/d"], capture_output=True, text=True)
    if r.returncode != 0:
        print("ERROR", r.stderr, flush=True); sys.exit(1)
    print(f"ACK put {name} {i} {zlib.crc32(data)}", flush=True)
'''

# Guest side, after a crash: every object's CRC (zlib crc32) and the store's listing.
CHECKER = r'''
import json, subprocess, sys, zlib
r = subprocess.run(["csdctl", "--json", "ls"], capture_output=True, text=True)
if r.returncode != 0:
    print("OPENFAIL", r.stderr.strip(), flush=True); sys.exit(1)
for o in json.loads(r.stdout):
    g = subprocess.run(["csdctl", "get", o["name"], "/tmp/o"], capture_output=True, text=True)
    if g.returncode != 0:
        print("GETFAIL", o["name"], g.stderr.strip(), flush=True); continue
    print("OBJ", o["name"], zlib.crc32(open("/tmp/o", "rb").read()), flush=True)
print("CHECKED", flush=True)
'''


def boot(disk: Path, workdir: Path, script: str, args: str):
    cfg = csdvm.VmConfig(csd=True, slm="64M", disk="128M")
    vm = csdvm.Vm(cfg, workdir, disk)
    files = dict(csdvm.project_files())
    (workdir / "job.py").write_text(script)
    files["/csd/job.py"] = workdir / "job.py"
    vm.start(f"#!/bin/sh\npython3 /csd/job.py {args}\n", {}, files)
    return vm


def lines(vm, deadline):
    while True:
        try:
            line = vm.lines.get(timeout=max(0.05, deadline - time.monotonic()))
        except queue.Empty:
            return
        if line is None:
            return
        yield line


def main() -> int:
    rounds = int(os.environ.get("CSD_CRASH_ROUNDS", "6"))
    rng = random.Random(int(os.environ.get("CSD_CRASH_SEED", "7")))
    passed = failed = 0
    state: dict[str, int] = {}      # acknowledged: name -> crc
    next_i = 0
    with tempfile.TemporaryDirectory(prefix="csd-crash-") as tmp:
        disk = Path(tmp) / "ns.img"
        with open(disk, "wb") as f:
            f.truncate(128 << 20)
        # format once
        vm = boot(disk, Path(tmp), "import subprocess; subprocess.run(['csdctl', 'format'], check=True)", "")
        for _ in lines(vm, time.monotonic() + 120):
            pass
        vm.kill()
        for rnd in range(rounds):
            vm = boot(disk, Path(tmp), WRITER, str(next_i))
            kill_after = rng.uniform(0.2, 4.0)
            first_ack = None
            last_i = next_i
            inflight = None
            for line in lines(vm, time.monotonic() + 180):
                w = line.split()
                if w[:1] in (["ACK"], ["NOOP"]):
                    if w[:2] == ["ACK", "put"]:
                        state[w[2]] = int(w[4])
                    elif w[:2] == ["ACK", "rm"]:
                        state.pop(w[2], None)
                    last_i = int(w[3])
                    first_ack = first_ack or time.monotonic()
                elif w[:1] == ["ERROR"]:
                    print(f"# round {rnd}: writer failed: {line}")
                    break
                if first_ack and time.monotonic() - first_ack > kill_after:
                    break
            vm.kill()
            acked = len(state)
            # the update after the last acknowledged one may or may not have landed
            nxt = last_i + 1
            name = f"obj{nxt % 23}"
            if nxt % 7 == 3:
                inflight = (name, None)
            else:
                size = (nxt * 7919) % 300000 + 1
                data = random.Random(nxt).randbytes(size)  # as the guest makes it
                inflight = (name, zlib.crc32(data))
            next_i = last_i + 2
            # after the crash
            vm = boot(disk, Path(tmp), CHECKER, "")
            found: dict[str, int] = {}
            opened = checked = False
            for line in lines(vm, time.monotonic() + 180):
                w = line.split()
                if w[:1] == ["OBJ"]:
                    found[w[1]] = int(w[2])
                elif w[:1] == ["CHECKED"]:
                    opened = checked = True
                elif w[:1] in (["OPENFAIL"], ["GETFAIL"]):
                    print(f"# round {rnd}: {line}")
            vm.kill()
            ok = opened and checked
            for n, crc in state.items():
                if found.get(n) != crc and not (inflight and inflight[0] == n):
                    ok = False
                    print(f"# round {rnd}: acknowledged object {n} lost or damaged")
            for n in found:
                if n not in state and not (inflight and inflight[0] == n):
                    ok = False
                    print(f"# round {rnd}: object {n} present but its removal was acknowledged")
            if inflight:
                n, crc = inflight
                have = found.get(n)
                allowed = {state.get(n), crc}
                if have not in allowed:
                    ok = False
                    print(f"# round {rnd}: in-flight object {n} is neither the old nor the new version")
                if have == crc and crc is not None:
                    state[n] = crc
                elif have is None:
                    state.pop(n, None)
            label = f"round {rnd}: killed {kill_after:.1f} s into updates, {acked} objects acknowledged"
            if ok:
                passed += 1
                print(f"ok {passed + failed} {label}, all intact after restart", flush=True)
            else:
                failed += 1
                print(f"not ok {passed + failed} {label}", flush=True)
    print(f"crash: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
