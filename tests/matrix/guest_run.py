# SPDX-License-Identifier: MIT
"""The feature matrix in the guest (tests/vm/guest/matrix-*.sh): every guest way of
tests/matrix/matrix.py on the namespace format FORMAT, through /csd/bin/csd-matrix. Stamps the
namespace(s), sets each way up (csd.ko and its partition, the NVMe/TCP loopback), runs the
driver under a timeout (no line for a cell: it crashed or hung), reports each cell to the host
('@@CSD RESULT matrix-FORMAT JSON', kept in build/results/) and judges them against the
description and the committed results. For 'detached' every cell detaches the namespace
meanwhile: an Execute is queued behind busy compute units first, other commands come after;
'reset' resets the controller the same way (nvme reset, the namespace staying);
for 'exact' (a timing model, csd.exact=on) no drive may count an overrun of its model.

Usage: python3 /csd/matrix/guest_run.py FORMAT [WAY,WAY...]   (default: every guest way)"""
import glob
import json
import os
import re
import struct
import subprocess
import sys
import threading
import time

sys.path[:0] = ["/csd/matrix", "/csd/tests"]
import matrix  # noqa: E402
from csd_guest import EXECUTE, passthru  # noqa: E402

FMT = sys.argv[1]
ONLY = sys.argv[2].split(",") if len(sys.argv) > 2 else None  # a subset of the ways (a run of new cells)
BIN = "/csd/bin/csd-matrix"
TIMEOUT = 180                      # seconds one driver run may take
PART = 32 << 20                    # csd.ko: the partitioned tenant's first byte, and its size
ZONE = 4 << 20                     # zoned: zone size (the layout's zoned.zone_size)
WAITS_IN_DRIVE = {"gather", "embedding_bag", "chase"}  # detached: queued behind busy units first


def sh(cmd, check=True):
    """Runs cmd in sh with the guest tests' helpers (lib.sh); its stdout."""
    r = subprocess.run(["sh", "-c", ". /csd/tests/lib.sh; " + cmd], capture_output=True, text=True)
    if check and r.returncode:
        raise SystemExit(f"matrix: '{cmd}' failed ({r.returncode}): {r.stdout}{r.stderr}")
    return r.stdout.strip()


def nvm_node(ctrl):
    """(/dev/ngXnY, /dev/nvmeXnY, LBA size) of NSID 1 of controller ctrl (nvme0), or None:
    its namespace under /sys/class/nvme/ctrl (nvmeXnY, or a path nvmeXcZnY of a subsystem's
    namespace nvmeXnY)."""
    for b in sorted(glob.glob(f"/sys/class/nvme/{ctrl}/nvme*")):
        m = re.fullmatch(r"nvme(\d+)(?:c\d+)?n(\d+)", os.path.basename(b))
        try:
            if not m or open(f"{b}/nsid").read().strip() != "1":
                continue
            head = f"nvme{m[1]}n{m[2]}"
            lba = int(open(f"/sys/block/{head}/queue/logical_block_size").read())
        except OSError:
            continue
        return f"/dev/ng{m[1]}n{m[2]}", f"/dev/{head}", lba
    return None


def wait_node(ctrl, seconds=30):
    """nvm_node(ctrl) once the kernel made it (after an attach)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        n = nvm_node(ctrl)
        if n and os.path.exists(n[0]) and os.path.exists(n[1]):
            return n
        time.sleep(0.2)
    raise SystemExit(f"matrix: no node for NSID 1 of {ctrl} after {seconds} s")


def controllers():
    """The PCI NVMe controllers (nvme0, nvme1, ...), not fabric ones."""
    return sorted(os.path.basename(c) for c in glob.glob("/sys/class/nvme/nvme*")
                  if open(f"{c}/transport").read().strip() == "pcie")


CTRLS = controllers()
NODES = {c: wait_node(c) for c in CTRLS}
NG, BLK, LBA = NODES["nvme0"]
print(f"matrix {FMT}: controllers {CTRLS}, NVM namespace {NG} ({BLK}, {LBA}-byte LBAs)", flush=True)
ZONED = FMT == "zoned"
ZONE_LBAS = ZONE // LBA

for i, c in enumerate(CTRLS):  # every block of the first 64 MiB says its LBA and drive
    r = subprocess.run([BIN, "--stamp", NODES[c][0], str(i)], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"matrix: stamping {NODES[c][0]}: {r.stderr}")

ALL_GUEST_WAYS = [w for w in matrix.WAY_IDS if matrix.place_of(w) == "guest"]  # a way's zones: by its place here
guest_ways = [w for w in ALL_GUEST_WAYS if not ONLY or w in ONLY]
wanted = {w: [r for r in matrix.ROW_IDS if matrix.expect(r, w, FMT).kind != "na"] for w in guest_ways}
fabric = {}


def setup(way):
    """Sets a way up once (csd.ko, its partition; the NVMe/TCP loopback); its driver's options."""
    lba_part = PART // LBA
    if way in matrix.SNIA_OF:  # the SNIA API over its libcsd way's drive
        return setup(matrix.SNIA_OF[way]) + ["--api", "snia"]
    if way in matrix.FIO_OF:  # fio's csd engine (the guest's fio) over its libcsd way's drive
        return setup(matrix.FIO_OF[way]) + ["--api", "fio", "--fio-engine", "/csd/lib/csd-fio.so"]
    if way in ("kmod", "kmod-part"):
        if FMT == "detached" and os.path.exists("/sys/module/csd"):
            sh("rmmod csd")  # it keeps the namespace it found at load: a fresh one for each cell
        if not os.path.exists("/sys/module/csd"):
            sh("insmod /csd/kmod/csd.ko group=990")
        if way == "kmod":  # no partitions: every member of the group sees the whole namespace
            sh("echo > /sys/module/csd/parameters/partitions")
            return ["--device", "/dev/csd0?slm=16M", "--as-user", "csdother", "--check", BLK]
        uid = sh("id -u csduser")
        sh(f"echo uid:{uid}={lba_part}+{lba_part} > /sys/module/csd/parameters/partitions")
        return ["--device", "/dev/csd0?slm=16M", "--as-user", "csduser", "--base", str(lba_part), "--check", BLK]
    if way == "tcp":
        if "ng" not in fabric:
            serial = open("/sys/class/nvme/nvme0/serial").read().strip()
            sh("fabric_modules; fabric_export /dev/nvme0 127.0.0.1 1")
            fabric["ng"] = sh(f"fabric_connect 127.0.0.1 10 1 {serial}")
        return ["--device", fabric["ng"], "--check", BLK]
    if way == "driveset":
        args = []
        for i, c in enumerate(CTRLS):
            args += ["--device", NODES[c][0], "--salt", str(i), "--check", NODES[c][1]]
        return args
    base = ["--device", NG, "--check", BLK]
    return base + {"ioctl": [], "uring": ["--uring"], "nvme-cs": ["--front-end", "nvme-cs"],
                   "host": ["--front-end", "host"]}[way]


def parse(out, way, rows, why_missing):
    """The driver's JSON lines; a row without one: a failure saying why."""
    got = {}
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                d = json.loads(line)
                got[d["row"]] = d
            except ValueError:
                pass
    for r in rows:
        if r not in got:
            got[r] = {"row": r, "way": way, "format": FMT, "outcome": "fail", "status": "",
                      "detail": why_missing}
    return [got[r] for r in rows]


def run_driver(way, args, rows, extra=()):
    """Runs csd-matrix for rows of way; its results (a crash or a hang fails the rows left)."""
    argv = [BIN, "--way", way, "--format", FMT, "--rows", ",".join(rows), "--bpf-dir", "/csd/bpf", *args, *extra]
    if ZONED:
        argv += ["--zones", f"{(16 + 3 * ALL_GUEST_WAYS.index(way)) * ZONE_LBAS},{ZONE_LBAS}"]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)
        why = f"the driver ended with {r.returncode} before this row: {r.stderr.strip()[-300:]}"
        return parse(r.stdout, way, rows, why)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return parse(out, way, rows, f"hang: no answer in {TIMEOUT} s")


# ---------------------------------------------------------------- detached meanwhile
N = 2048  # gemm 2048^3 keeps the one compute unit busy for a while
GEMM = struct.pack("<4I2f", N, N, N, 0, 1.0, 0.0)


def gemm(dev, ends):
    """A gemm Execute on the raw node (A and B at SLM 0, C at 48 MiB: clear of the driver's
    buffers); its status is not the test's, the time it ended is put in ends."""
    d = struct.pack("<4sHHHHI", b"CSDX", 1, 0x02, 3, 0, len(GEMM))
    for off, ln in ((0, N * N * 4), (0, N * N * 4), (48 << 20, N * N * 4)):
        d += struct.pack("<QQ", off, ln)
    d += GEMM
    try:
        passthru(EXECUTE, cdw={10: len(d)}, write=d, dev=dev)
    except OSError:
        pass
    ends.append(time.monotonic())


def cntlid():
    """The controller ID of /dev/nvme0 (for nvme detach-ns / attach-ns)."""
    out = sh("nvme id-ctrl /dev/nvme0")
    return int(re.search(r"^cntlid\s*:\s*(\S+)", out, re.M).group(1), 0)


def detached_cell(way, args, row):
    """One cell with the namespace detached meanwhile: the driver places its data and waits
    (--go); an Execute is then queued behind gemms that hold the unit and the namespace
    detached while it waits, other commands follow the detach; then it is attached again.
    An Execute's cell counts only if a gemm ended after the detach began (so the Execute,
    behind them, still waited): otherwise it is run again with twice the gemms."""
    for gemms in (3, 6, 12):
        res, held = detached_try(way, setup(way), row, gemms)
        if held:
            return res
        print(f"matrix detached: {way} × {row}: the gemms ended before the detach; again with {2 * gemms}",
              flush=True)
    return [dict(r, outcome="fail", detail="the compute unit could not be kept busy until the detach")
            for r in res]


def detached_try(way, args, row, gemms):
    """One try of a detached cell with gemms gemms ahead of an Execute: (results, whether
    the detach began while they held the unit; always True for a command that does not wait)."""
    global NG, BLK
    go = f"/tmp/go-{way}-{row}"
    argv = [BIN, "--way", way, "--format", FMT, "--rows", row, "--bpf-dir", "/csd/bpf", "--go", go, *args]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 60
    while not os.path.exists(go + ".ready") and p.poll() is None and time.monotonic() < end:
        time.sleep(0.05)
    busy, ends, detach_at = [], [], 0.0
    # host mode runs the Execute in the driver's own core: it cannot be held in the drive
    waits = row in WAITS_IN_DRIVE and way != "host"
    if waits and p.poll() is None:
        busy = [threading.Thread(target=gemm, args=(NG, ends)) for _ in range(gemms)]
        for t in busy:
            t.start()
            time.sleep(0.05)
        open(go, "w").close()
        time.sleep(0.5)  # submitted; waiting behind the gemms
        detach_at = time.monotonic()
        meanwhile()
    else:
        meanwhile()
        open(go, "w").close()
    try:
        out, err = p.communicate(timeout=TIMEOUT)
        res = parse(out, way, [row], f"the driver ended with {p.returncode}: {err.strip()[-300:]}")
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        res = parse(out, way, [row], f"hang: no answer in {TIMEOUT} s")
    for t in busy:
        t.join(120)
    if FMT == "detached":
        sh(f"nvme attach-ns /dev/nvme0 -n 1 -c {CNTLID}")
    NG, BLK, _ = wait_node("nvme0")
    for f in (go, go + ".ready"):
        if os.path.exists(f):
            os.unlink(f)
    return res, not waits or any(e > detach_at for e in ends)


def meanwhile():
    """What happens while a cell's command waits: the namespace detached, or the controller
    reset (nvme reset returns once the controller is live again)."""
    if FMT == "detached":
        sh(f"nvme detach-ns /dev/nvme0 -n 1 -c {CNTLID}")
    else:
        sh("nvme reset /dev/nvme0")


CNTLID = cntlid() if FMT == "detached" else 0
results = []
for way in guest_ways:
    rows = wanted[way]
    if not rows:
        continue
    t0 = time.monotonic()
    try:
        args = setup(way)
    except SystemExit as e:  # a way that cannot be set up fails its cells, saying why
        results += parse("", way, rows, f"set-up failed: {e}")
        continue
    if FMT in ("detached", "reset"):
        for row in rows:
            results += detached_cell(way, None, row)
    else:
        results += run_driver(way, args, rows)
    print(f"matrix {FMT}: {way} in {time.monotonic() - t0:.1f} s", flush=True)

# the kernel said nothing of a bug while the cells ran (csd.ko, the NVMe driver, nvmet)
oops = [line for line in subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines()
        if re.search(r"BUG:|Oops|WARNING:|general protection|Call Trace|refcount_t", line)]
if oops:
    print("matrix: the kernel reported a bug:\n  " + "\n  ".join(oops[:20]), flush=True)
    results = [dict(r, outcome="fail", detail="the kernel reported a bug during the run: " + oops[0])
               if r["way"] in ("kmod", "kmod-part", "tcp") else r for r in results]

if FMT == "exact":  # every completion at its modelled time: the drives held the guest, never overran
    import nvme_csd  # noqa: E402
    for c in CTRLS:
        st = nvme_csd.open(NODES[c][0]).stats
        print(f"matrix exact: {c}: {st['model_holds']} holds, {st['model_overruns']} overruns", flush=True)
        if st["model_overruns"]:
            results = [dict(r, outcome="fail", detail=f"{c} counted {st['model_overruns']} overruns of its model "
                                                     "(C1h) in exact mode") for r in results]

path = f"/tmp/matrix-{FMT}.jsonl"
with open(path, "w") as f:
    for r in results:
        f.write(json.dumps(r) + "\n")
        print(f"@@CSD RESULT matrix-{FMT} {json.dumps(r)}", flush=True)
for r in results:
    if r["outcome"] != "ok":
        print(f"  {r['way']} × {r['row']}: {r['outcome']} {r['status']} — {r['detail'][:200]}", flush=True)
sys.exit(matrix.judge(FMT, [path], f"matrix-{FMT}", ONLY))
