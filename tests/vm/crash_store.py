#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Crash consistency of the object store, as a power cut would test it. The guest puts,
overwrites and removes objects back to back while QEMU logs every write and Flush the
drive receives (QEMU's blklogwrites); QEMU is SIGKILLed at a random time, and a power cut
is placed at a random point of that write stream: the namespace is rebuilt from the log
with every write up to the last Flush before the cut, and a random subset of the writes
after it, as a drive with a volatile write cache may leave them. A fresh QEMU boots on that
image and checks that the store opens, holds every update acknowledged before the cut
byte for byte, and is exactly the state after some prefix of the updates then in flight
(nothing half-written). A missing Flush shows as lost or torn data.
CSD_CRASH_ROUNDS (default 8; >= 200 for a long run), CSD_CRASH_SEED, CSD_CRASH_CHAINS (drives
run side by side, each its own sequence of rounds; default 2 on two or more cores).
Prints 'crash: N passed, N failed'."""

import os
import queue
import shutil
import struct
import subprocess
import zlib
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import csdvm  # noqa: E402


# Guest side, one boot per round: first check what the last power cut left (every
# object's zlib CRC, checked by the store against its CRC-32C too), free what killed puts
# reserved, then a stream of updates through the library (back to back, so that the cut
# lands inside updates), each acknowledged only after the call returned.
JOB = r'''
import random, sys, zlib
import nvme_csd
start = int(sys.argv[1])
d = nvme_csd.open("/dev/ng0n1")
try:
    names = sorted(d.store.keys())
except Exception as e:
    print("OPENFAIL", e, flush=True); sys.exit(1)
for n in names:
    try:
        print("OBJ", n, zlib.crc32(d.store.get(n)), flush=True)
    except Exception as e:
        print("GETFAIL", n, e, flush=True)
left = d.store.reclaim(0)
if left:
    print("RECLAIMED", left, "reservation(s) of killed puts", flush=True)
print("CHECKED", flush=True)
if start < 0:
    sys.exit(0)
for i in range(start, start + 100000):
    name = f"obj{i % 23}"
    if i % 7 == 3:
        try:
            del d.store[name]
            print(f"ACK rm {name} {i} {d.store.generation}", flush=True)
        except nvme_csd.NotFound:
            print(f"NOOP rm {name} {i}", flush=True)
        continue
    size = (i * 7919) % 300000 + 1
    data = random.Random(i).randbytes(size)
    try:
        d.store[name] = data
    except Exception as e:
        print("ERROR", e, flush=True); sys.exit(1)
    print(f"ACK put {name} {i} {zlib.crc32(data)} {d.store.generation}", flush=True)
'''


def boot(disk: Path, workdir: Path, script: str, args: str, write_log: Path | None = None):
    cfg = csdvm.VmConfig(csd=True, slm="64M", disk="128M", write_log=str(write_log or ""))
    vm = csdvm.Vm(cfg, workdir, disk)
    files = dict(csdvm.project_files())
    (workdir / "job.py").write_text(script)
    files["/csd/job.py"] = workdir / "job.py"
    vm.start(f"#!/bin/sh\npython3 /csd/job.py {args}\n", {}, files)
    return vm


def format_store(disk: Path) -> str:
    """Makes an empty object store on the namespace file on the host, with csdctl through the
    in-process device (the same bytes on the same 512-byte blocks as in a guest, no boot
    spent on it; the first round's boot checks that the store it finds is empty). Returns
    "" or why it failed."""
    csdctl = csdvm.BUILD / "meson" / "host" / "csdctl"
    try:
        p = subprocess.run([str(csdctl), "-d", f"emu:{disk}?size={disk.stat().st_size >> 20}M", "format"],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)
    return "" if p.returncode == 0 else f"csdctl exit {p.returncode}: {p.stderr.strip()}"


def lines(vm, deadline):
    """The guest's console lines until the deadline (a time, or a function giving the
    current one) however fast they come, or until the guest ends."""
    when = deadline if callable(deadline) else (lambda: deadline)
    while time.monotonic() < when():
        try:
            line = vm.lines.get(timeout=max(0.05, min(1.0, when() - time.monotonic())))
        except queue.Empty:
            continue
        if line is None:
            return
        yield line


SECTOR = 512
LOG_FLUSH, LOG_DISCARD, LOG_MASK = 1, 4, 0xF
LOG_MAGIC = 0x6a736677736872


def parse_write_log(path: Path, disk_bytes: int):
    """The entries of a blklogwrites (dm-log-writes) log in order: (flags, disk offset,
    log offset of the data, data length); length 0 for a Flush or discard. Entries past
    the superblock's count (not yet committed by a Flush) are read while they are whole;
    the first torn or empty one ends the log, as the kill left it."""
    size = path.stat().st_size
    out = []
    with open(path, "rb") as f:
        head = f.read(SECTOR)
        if len(head) < SECTOR:
            return out
        magic, version, _count, sectorsize = struct.unpack_from("<QQQI", head, 0)
        # The superblock is written at the first Flush: a log with none has zeros there.
        assert (magic == LOG_MAGIC and version == 1 and sectorsize == SECTOR) or magic == 0, "not a write log"
        at = SECTOR
        while at + SECTOR <= size:
            f.seek(at)
            sector, nr, flags, _ = struct.unpack("<QQQQ", f.read(32))
            if flags & ~LOG_MASK or (nr == 0 and not flags & LOG_FLUSH) or (sector + nr) * SECTOR > disk_bytes:
                break
            data_len = 0 if flags & (LOG_FLUSH | LOG_DISCARD) else nr * SECTOR
            if at + SECTOR + data_len > size:
                break
            out.append((flags, sector * SECTOR, at + SECTOR, data_len))
            at += SECTOR + data_len
    return out


def power_cut_image(snapshot: Path, disk: Path, log: Path, entries, rng) -> str:
    """Rebuilds the namespace from the snapshot taken before the round: every write up to
    the last Flush, then a random subset of the writes after it."""
    shutil.copyfile(snapshot, disk)
    last_flush = max((k for k, e in enumerate(entries) if e[0] & LOG_FLUSH), default=-1)
    kept = dropped = 0
    with open(disk, "r+b") as f, open(log, "rb") as lf:
        for k, (flags, off, at, length) in enumerate(entries):
            if not length:
                continue
            if k > last_flush and rng.random() < 0.5:
                dropped += 1
                continue
            kept += k > last_flush
            lf.seek(at)
            f.seek(off)
            f.write(lf.read(length))
    return (f"{last_flush + 1} log entries durable, of the {len(entries) - last_flush - 1} after the last "
            f"Flush {kept} writes kept and {dropped} dropped")


def update(i: int):
    """The writer's i-th update: ('rm', name) or ('put', name, crc)."""
    name = f"obj{i % 23}"
    if i % 7 == 3:
        return ("rm", name)
    size = (i * 7919) % 300000 + 1
    return ("put", name, zlib.crc32(random.Random(i).randbytes(size)))  # as the guest makes it


def apply(state: dict, u) -> dict:
    s = dict(state)
    if u[0] == "rm":
        s.pop(u[1], None)
    else:
        s[u[1]] = u[2]
    return s


IN_FLIGHT = 8  # updates after the acknowledged ones that may have landed at the cut
STORE_BLOCK = 4096


def committed_generation(log: Path, entries) -> int:
    """The newest store generation among the superblocks the entries wrote (the two
    superblock slots are the first two 4 KiB blocks of the namespace), 0 if none."""
    newest = 0
    with open(log, "rb") as f:
        for flags, off, at, length in entries:
            if length >= 24 and off in (0, STORE_BLOCK):
                f.seek(at)
                head = f.read(24)
                if len(head) == 24 and head[:8] == b"CSDSTOR1":
                    newest = max(newest, struct.unpack_from("<Q", head, 16)[0])
    return newest


def check(vm, rnd, first_deadline):
    """Reads the check phase of a boot: (objects found, whether the check completed); a
    check that does not complete prints the guest's last console lines."""
    found: dict[str, int] = {}
    seen: list[str] = []
    for line in lines(vm, first_deadline):
        w = line.split()
        seen = (seen + [line])[-15:]
        if w[:1] == ["OBJ"]:
            found[w[1]] = int(w[2])
        elif w[:1] == ["CHECKED"]:
            return found, True
        elif w[:1] in (["OPENFAIL"], ["GETFAIL"], ["RECLAIMED"]):
            print(f"# round {rnd}: {line}")
            if w[0] == "OPENFAIL":
                break
    print(f"# round {rnd}: the guest's last console lines:" + "".join(f"\n#   {x}" for x in seen))
    return found, False


def verdict(rnd, candidates, acked, found, checked, label, counts) -> dict:
    match = next((k for k, c in enumerate(candidates) if c == found), None)
    if checked and match is None:
        for n, crc in acked.items():
            if found.get(n) != crc and all(c.get(n) != found.get(n) for c in candidates[1:]):
                print(f"# round {rnd}: acknowledged object {n} lost or damaged")
        for n in found:
            if all(n not in c for c in candidates):
                print(f"# round {rnd}: object {n} present but never acknowledged nor in flight")
        print(f"# round {rnd}: the store is no prefix of the updates (acknowledged + {IN_FLIGHT} in flight)")
    if checked and match is not None:
        counts[0] += 1
        print(f"ok {sum(counts)} {label}; store intact ({match} in-flight update(s) landed)", flush=True)
    else:
        counts[1] += 1
        print(f"not ok {sum(counts)} {label}", flush=True)
    return candidates[match] if match is not None else found


def chain(c: int, rounds: int, rng: random.Random, counts: list[int]) -> None:
    """One drive's sequence of rounds: each boot checks what the previous power cut left,
    then updates until it is killed; counts the verdicts into counts (passed, failed)."""
    state: dict[str, int] = {}      # the store's verified contents: name -> crc
    next_i = 0
    pending = None                  # (round, candidates, acknowledged, label) to check at the next boot
    with tempfile.TemporaryDirectory(prefix="csd-crash-") as tmp:
        disk, snapshot, log = Path(tmp) / "ns.img", Path(tmp) / "before.img", Path(tmp) / "writes.log"
        with open(disk, "wb") as f:
            f.truncate(128 << 20)
        why = format_store(disk)
        if why:
            print(f"# chain {c}: the store was not formatted on the host: {why}")
            counts[1] += 1
            return
        for n in range(rounds + 1):
            rnd = f"{c}.{n}" if c else str(n)   # chain 0 keeps the plain round numbers
            last = n == rounds            # the last boot only checks the last cut
            shutil.copyfile(disk, snapshot)
            log.write_bytes(b"")
            vm = boot(disk, Path(tmp), JOB, str(-1 if last else next_i), write_log=log)
            started = time.monotonic()
            found, checked = check(vm, rnd, started + 300)
            if not checked:
                print(f"# round {rnd}: the check did not finish ({time.monotonic() - started:.0f} s, "
                      f"{len(found)} object(s) read)")
            if pending:
                state = verdict(pending[0], pending[1], pending[2], found, checked, pending[3], counts)
            elif checked and found != state:
                print(f"# round {rnd}: the freshly formatted store is not empty: {sorted(found)}")
                counts[1] += 1
            elif not checked:
                counts[1] += 1
            if last or not checked:
                vm.kill()
                break
            kill_after = rng.uniform(0.2, 4.0)
            deadline = [time.monotonic() + 180]
            acks = {}                     # update index -> store generation after it
            noops = set()                 # rm of an absent object: no commit
            for line in lines(vm, lambda: deadline[0]):
                w = line.split()
                if w[:1] == ["NOOP"]:
                    noops.add(int(w[3]))
                elif w[:1] == ["ACK"]:
                    acks[int(w[3])] = int(w[-1])
                    if len(acks) == 1:    # the store is open and updating: kill at a random time
                        deadline[0] = time.monotonic() + kill_after
                elif w[:1] == ["ERROR"]:
                    print(f"# round {rnd}: writer failed: {line}")
                    break
            vm.kill()
            entries = parse_write_log(log, 128 << 20)
            cut = rng.randint(0, len(entries))  # the power cut: after this many log entries
            last_flush = max((k for k in range(cut) if entries[k][0] & LOG_FLUSH), default=-1)
            durable_gen = committed_generation(log, entries[:last_flush + 1])
            how = power_cut_image(snapshot, disk, log, entries[:cut], rng)
            # Acknowledged at the cut: updates whose last commit was written and flushed
            # before it (their generation is durable); a NOOP rm changes nothing.
            acked, i = dict(state), next_i
            while (i in acks and acks[i] <= durable_gen) or i in noops:
                acked = apply(acked, update(i)) if i in acks else acked
                i += 1
            candidates = [acked]
            for k in range(IN_FLIGHT):
                candidates.append(apply(candidates[-1], update(i + k)))
            next_i = max([next_i - 1] + list(acks) + list(noops)) + 1 + IN_FLIGHT
            label = (f"round {rnd}: {len(acks)} updates acknowledged in {kill_after:.1f} s; power cut after "
                     f"{cut} of {len(entries)} log entries (generation {durable_gen} durable); {how}")
            pending = (rnd, candidates, acked, label)


def main() -> int:
    """Runs CSD_CRASH_ROUNDS rounds as CSD_CRASH_CHAINS independent drives side by side
    (default: one per core, at most 2), each with its own seed; prints the closing line."""
    rounds = int(os.environ.get("CSD_CRASH_ROUNDS", "8"))
    seed = int(os.environ.get("CSD_CRASH_SEED", "7"))
    chains = max(1, min(rounds, int(os.environ.get("CSD_CRASH_CHAINS", min(2, os.cpu_count() or 1)))))
    counts = [0, 0]                 # passed, failed
    share = [rounds // chains + (c < rounds % chains) for c in range(chains)]
    threads = [threading.Thread(target=chain, args=(c, share[c], random.Random(seed + 1000 * c), counts), daemon=True)
               for c in range(chains)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        csdvm.kill_all()
    passed, failed = counts
    if passed + failed < rounds:
        failed = rounds - passed
    print(f"crash: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
