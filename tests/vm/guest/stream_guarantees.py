# SPDX-License-Identifier: MIT
"""Guest test (stream-guarantees.sh): streamed programs through a csd.ko tenant's window, and
a real nvme detach-ns mid-stream."""
import hashlib
import json
import os
import re
import subprocess

import numpy as np

from csd_guest import Checks, cntlid, slm_load, wait_for

c = Checks()
REC = 16  # bytes a record: id u32, then the f32 field the filter compares, then padding


def sh(cmd, user=None, timeout=240):
    """Runs cmd (as user, through su) and returns (exit status, stdout, stderr)."""
    argv = ["su", "-s", "/bin/sh", user, "-c", cmd] if user else ["/bin/sh", "-c", cmd]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"$ {cmd}: still running after {timeout} s", flush=True)
        return 124, "", "timeout"
    print(f"$ {cmd} -> {r.returncode} {(r.stdout + r.stderr).strip()[-300:]}", flush=True)
    return r.returncode, r.stdout, r.stderr


def records(n, seed):
    """n records; the field uniform in [0, 1)."""
    rng = np.random.default_rng(seed)
    a = np.zeros((n, 4), dtype=np.float32)
    a[:, 0] = np.arange(n, dtype=np.uint32).view(np.float32)
    a[:, 1] = rng.random(n, dtype=np.float32)
    a[:, 2:] = rng.random((n, 2), dtype=np.float32)
    return a


def raw_digest(first_lba, lbas):
    """MD5 of namespace LBAs [first_lba, first_lba + lbas), read raw (O_DIRECT) as root."""
    h = hashlib.md5()
    fd = os.open("/dev/nvme0n1", os.O_RDONLY)
    try:
        left, at = lbas * 512, first_lba * 512
        while left:
            b = os.pread(fd, min(left, 4 << 20), at)
            h.update(b)
            at += len(b)
            left -= len(b)
    finally:
        os.close(fd)
    return h.hexdigest()


# ---------------------------------------------------------------- csd.ko tenants
sh("insmod /csd/kmod/csd.ko group=990")
c.ok(os.path.exists("/dev/csd0"), "csd.ko attached: /dev/csd0")
ua = int(subprocess.run(["id", "-u", "csduser"], capture_output=True, text=True).stdout)
ub = int(subprocess.run(["id", "-u", "csdother"], capture_output=True, text=True).stdout)
PART = 65536  # LBAs of 512 bytes: 32 MiB a tenant
with open("/sys/module/csd/parameters/partitions", "w") as f:
    f.write(f"uid:{ua}=0+{PART},uid:{ub}={PART}+{PART}\n")
DEV = "'/dev/csd0?slm=4M'"  # each tenant's handle uses at most 4 MiB of SLM
for user in ("csduser", "csdother"):
    c.ok(sh(f"csdctl -d {DEV} format --force", user)[0] == 0, f"{user} formats a store in its partition")

# the other tenant's object and a buffer of its SLM, held while the first tenant streams
theirs = os.urandom(3 << 20)
with open("/tmp/theirs", "wb") as f:
    f.write(theirs)
os.chmod("/tmp/theirs", 0o644)
c.ok(sh(f"csdctl -d {DEV} put theirs /tmp/theirs", "csdother")[0] == 0, "csdother puts an object")
holder = subprocess.Popen(
    ["su", "-s", "/bin/sh", "csdother", "-c",
     "cd /csd/python && exec python3 -c '"
     "import sys, nvme_csd, numpy as np\n"
     "d = nvme_csd.open(\"/dev/csd0\")\n"
     "s = d.to_slm(np.full(1 << 20, 0xA5, dtype=np.uint8))\n"
     "print(\"held\", flush=True)\n"
     "sys.stdin.readline()\n"
     "print(\"intact\" if (d.read(s) == 0xA5).all() else \"changed\", flush=True)\n'"],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
c.ok(holder.stdout.readline().strip() == "held", "csdother holds 1 MiB of SLM with a pattern")
before_b = raw_digest(PART, PART)

# the first tenant's object: 12 MiB of records, three times the SLM its handle may use
recs = records((12 << 20) // REC, 1)
recs.tofile("/tmp/recs")
os.chmod("/tmp/recs", 0o644)
c.ok(sh(f"csdctl -d {DEV} put recs /tmp/recs", "csduser")[0] == 0, "csduser puts 12 MiB of records")
rc, out, err = sh(f"csdctl -d {DEV} run filter recs hot --record-size 16 --field-offset 4 --type f32 "
                  f"--op gt --lo 0.9 --slm-budget 1048576", "csduser")
c.ok(rc == 0, "csduser streams a filter over 12 MiB with 1 MiB of SLM")
want = recs[recs[:, 1] > np.float32(0.9)]
sh("rm -f /tmp/hot.bin", None)
rc, _, _ = sh(f"csdctl -d {DEV} get hot /tmp/hot.bin", "csduser")
got = np.fromfile("/tmp/hot.bin", dtype=np.float32).reshape(-1, 4) if rc == 0 else None
c.ok(got is not None and got.shape == want.shape and (got.view(np.uint32) == want.view(np.uint32)).all(),
     f"the streamed filter's records are numpy's ({len(want)} of {len(recs)})")
rc, out, _ = sh(f"csdctl -d {DEV} --json run checksum recs --slm-budget 1048576", "csduser")
rc2, ls, _ = sh(f"csdctl -d {DEV} --json ls", "csduser")
crc = {o["name"]: int(o["crc32c"], 16) for o in json.loads(ls)} if rc2 == 0 else {}
c.ok(rc == 0 and int(json.loads(out)["checksum"], 16) == crc.get("recs"),
     "a streamed checksum equals the CRC the catalog holds")

holder.stdin.write("\n")
holder.stdin.flush()
c.ok(holder.stdout.readline().strip() == "intact", "csdother's SLM is intact after csduser's pieces")
holder.wait(30)
c.ok(raw_digest(PART, PART) == before_b, "csdother's partition of the namespace is unchanged, byte for byte")
rc, _, _ = sh(f"csdctl -d {DEV} get theirs /tmp/theirs.out", "csdother")
c.ok(rc == 0 and open("/tmp/theirs.out", "rb").read() == theirs, "csdother's object reads back intact")
rc, ls, _ = sh(f"csdctl -d {DEV} --json ls", "csdother")
c.ok(rc == 0 and '"recs"' not in ls and '"hot"' not in ls, "csdother's store lists none of csduser's objects")

# a crafted request past csduser's window: its SLM Load of the LBA just past the partition
rc, out, err = sh("cd /csd/python && python3 -c '"
                  "import nvme_csd\n"
                  "d = nvme_csd.open(\"/dev/csd0\")\n"
                  "s = d.alloc(4096)\n"
                  "try:\n"
                  f"    d._dev.slm_load({PART}, 1, s.offset)\n"
                  "    print(\"loaded\")\n"
                  "except Exception as e:\n"
                  "    print(\"refused:\", e)\n'", "csduser")
c.ok("refused:" in out and "LBA Out of Range" in out, "an SLM Load past the tenant's partition is refused, named")
# and a streamed run as large as the whole SLM budget still refused beyond the handle's SLM
rc, out, err = sh(f"csdctl -d {DEV} run filter recs hot2 --record-size 16 --field-offset 4 --type f32 "
                  f"--op gt --lo 0.9 --slm-budget 67108864", "csduser")
c.ok(rc == 0, "a budget above the handle's SLM streams within the SLM the handle has")
with open("/sys/module/csd/parameters/partitions", "w") as f:
    f.write("\n")
sh("rmmod csd")

# ---------------------------------------------------------------- detach mid-stream
D = "-d /dev/ng0n1"
c.ok(sh(f"csdctl {D} format --force")[0] == 0, "a store over the whole namespace")
big = records((64 << 20) // REC, 2)
big.tofile("/tmp/big")
c.ok(sh(f"csdctl {D} put big /tmp/big")[0] == 0, "64 MiB of records put")
rc, ls_before, _ = sh(f"csdctl {D} --json ls")


def host_read_commands():
    """The SMART log's Host Read Commands (QEMU counts the block layer's read requests)."""
    return int(json.loads(sh("nvme smart-log /dev/nvme0 --output-format=json")[1])["host_read_commands"])


# an SLM Load of 16 MiB, which QEMU reads as 4 MiB pieces at once, is one command in the
# SMART log, as it was when QEMU read it in one request
reads0 = host_read_commands()
c.status(slm_load(0, (16 << 20) // 512, 0), 0, "an SLM Load of 16 MiB")
c.ok(host_read_commands() - reads0 == 1, "the SMART log counts it as one read command")
ctrl = cntlid()


def stream_meanwhile(what, argv):
    """A streamed filter of big into hot on /dev/ng0n1 with 128 KiB of SLM (pieces of 28 KiB,
    about 2,300 of them, seconds of work), argv run at its first progress line (a quarter
    done), while pieces are still being loaded and stored; csdctl's (status, stdout, stderr),
    status None if it hung."""
    run = subprocess.Popen(["csdctl", "-d", "/dev/ng0n1", "--progress", "run", "filter", "big", "hot", "--record-size",
                            "16", "--field-offset", "4", "--type", "f32", "--op", "gt", "--lo", "0.5", "--slm-budget",
                            "131072"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = run.stderr.readline()
    print("progress:", first.strip(), flush=True)
    c.ok("%" in first, f"{what}: the streamed filter is under way (its first progress line)")
    r = subprocess.run(argv, capture_output=True, text=True)
    print(f"$ {' '.join(argv[:2])} ->", r.returncode, (r.stdout + r.stderr).strip(), flush=True)
    try:
        out, rest = run.communicate(timeout=120)
        rc = run.returncode
    except subprocess.TimeoutExpired:
        run.kill()
        out, rest = run.communicate()
        rc = None
    print(f"csdctl after the {what} ->", rc, (out + rest).strip()[-400:], flush=True)
    return rc, out, rest


rc, out, rest = stream_meanwhile("detach", ["nvme", "detach-ns", "/dev/nvme0", "--namespace-id=1", f"--controllers={ctrl}"])
c.ok(rc is not None, "the streamed run came back after the detach (no hang)")
c.ok(rc not in (None, 0) and re.search(r"Invalid Namespace|No such device|namespace", rest, re.I) is not None,
     "it failed with an error that says the namespace went")
c.ok(sh("nvme id-ctrl /dev/nvme0 >/dev/null")[0] == 0, "the controller answers after the detach")
c.ok(wait_for("/dev/ng0n1", False), "/dev/ng0n1 went with the detach")
r = subprocess.run(["nvme", "attach-ns", "/dev/nvme0", "--namespace-id=1", f"--controllers={ctrl}"],
                   capture_output=True, text=True)
c.ok(r.returncode == 0, "attach NSID 1 again")
sh("nvme ns-rescan /dev/nvme0")
c.ok(wait_for("/dev/ng0n1", True), "/dev/ng0n1 is back")
rc, ls_after, _ = sh(f"csdctl {D} --json ls")
def names(text):
    return sorted(o["name"] for o in json.loads(text))



c.ok(rc == 0 and names(ls_after) == names(ls_before), "the store lists what it held before the stream (no 'hot')")
sh("rm -f /tmp/big.out")
c.ok(sh(f"csdctl {D} get big /tmp/big.out")[0] == 0 and sh("cmp /tmp/big /tmp/big.out")[0] == 0,
     "the streamed object reads back intact")
rc, _, _ = sh(f"csdctl {D} run filter big hot --record-size 16 --field-offset 4 --type f32 --op gt --lo 0.99 "
              f"--slm-budget 4194304")
want = big[big[:, 1] > np.float32(0.99)]
sh("rm -f /tmp/hot.bin")
got = np.fromfile("/tmp/hot.bin", dtype=np.float32).reshape(-1, 4) if sh(f"csdctl {D} get hot /tmp/hot.bin")[0] == 0 else None
c.ok(rc == 0 and got is not None and got.shape == want.shape and (got.view(np.uint32) == want.view(np.uint32)).all(),
     "after the attach the same filter streams again, numpy's records")
# ---------------------------------------------------------------- a controller reset mid-stream
# The same streamed filter with an `nvme reset` at its first progress line: the piece in flight
# is cancelled (the run stops with the drive's or the kernel's status for it, nothing stored),
# or the run goes on after it; either way no hang, and the store keeps what it held and frees
# what the run reserved (the namespace stayed: unlike the detach, the release reaches it).
sh(f"csdctl {D} rm hot")
rc, ls_before, _ = sh(f"csdctl {D} ls")
rc, out, rest = stream_meanwhile("reset", ["nvme", "reset", "/dev/nvme0"])
c.ok(rc is not None, "the streamed run came back after the reset (no hang)")
hot = big[big[:, 1] > np.float32(0.5)]
if rc == 0:  # the reset fell between its commands: the whole result
    sh("rm -f /tmp/hot.bin")
    got = np.fromfile("/tmp/hot.bin", dtype=np.float32).reshape(-1, 4) if sh(f"csdctl {D} get hot /tmp/hot.bin")[0] == 0 else None
    c.ok(got is not None and got.shape == hot.shape and (got.view(np.uint32) == hot.view(np.uint32)).all(),
         "reset: the run went on and stored numpy's records")
    sh(f"csdctl {D} rm hot")
else:
    c.ok(re.search(r"Abort|nothing stored", rest) is not None, "reset: the run stopped saying the piece was aborted "
                                                               "and nothing was stored")
rc, ls_after, _ = sh(f"csdctl {D} ls")
print("store before:", ls_before.strip().splitlines()[-1:], "after:", ls_after.strip().splitlines()[-1:], flush=True)


def ageless(text):
    """csdctl ls without the ages of reservations ('12 s ago'), which move on."""
    return re.sub(r", [0-9]+ (s|min|h|d) ago", "", text)


c.ok(rc == 0 and ageless(ls_after) == ageless(ls_before),
     "reset: the store lists what it held, its free bytes as before (no reservation left)")
rc, _, _ = sh(f"csdctl {D} run filter big hot --record-size 16 --field-offset 4 --type f32 --op gt --lo 0.5 "
              f"--slm-budget 4194304")
sh("rm -f /tmp/hot.bin")
got = np.fromfile("/tmp/hot.bin", dtype=np.float32).reshape(-1, 4) if sh(f"csdctl {D} get hot /tmp/hot.bin")[0] == 0 else None
c.ok(rc == 0 and got is not None and got.shape == hot.shape and (got.view(np.uint32) == hot.view(np.uint32)).all(),
     "after the reset the same filter streams again, numpy's records")
# Loads and Stores of many MiB (QEMU runs each as 4 MiB pieces at once: csd-ns-io.c.inc), every
# byte checked: the checksum of the whole object with all the SLM there is (pieces of up to 32
# MiB a command), and a filter that keeps every record, stored back by SLM Store and read back
rc, out, _ = sh(f"csdctl {D} --json run checksum big")
crc = {o["name"]: int(o["crc32c"], 16) for o in json.loads(sh(f"csdctl {D} --json ls")[1])}
c.ok(rc == 0 and int(json.loads(out)["checksum"], 16) == crc["big"], "a checksum over 64 MiB Loaded in 32 MiB commands")
sh(f"csdctl {D} rm hot")
rc, _, _ = sh(f"csdctl {D} run filter big all --record-size 16 --field-offset 4 --type f32 --op ge --lo -1")
sh("rm -f /tmp/all.bin")
c.ok(rc == 0 and sh(f"csdctl {D} get all /tmp/all.bin")[0] == 0 and sh("cmp /tmp/big /tmp/all.bin")[0] == 0,
     "a filter keeping every record of 64 MiB: SLM Loads and Stores of MiBs, byte for byte")
c.report()
