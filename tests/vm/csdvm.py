#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Boots the nvme-csd guest on the project's QEMU and runs tests or commands in it.

  csdvm.py test [--filter RE] [TEST.sh ...]  run guest tests (tests/vm/guest/*.sh), grouped
                                             by the device configuration each one declares
  csdvm.py cmd 'nvme list'                   run one command in the guest, return its status
  csdvm.py shell                             interactive guest shell (leave with Ctrl-a x)

Guest tests declare their device with a header line, e.g. ``# vm: csd=on lbads=12``
(keys: csd, slm, cu, disk, lbads, memory, timeout, device, alone, solo, peer, plugins, drives,
partner, subsys, ns, exact, icount, throttle). Tests whose lines ask for the same device share one boot (``alone``: a boot of its
own); the boots run side by side, ``--jobs`` at a time (default: one per core; a partner guest
takes a place of its own, ``solo`` runs with no other guest beside it), the longest first by
the times of earlier runs (~/.cache/nvme-csd/vm-times.json). The harness streams guest output, enforces a
per-boot and a per-test timeout, kills QEMU on every exit path, prints ``N passed, N failed``
and exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import queue
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
BUILD = TOP / "build"
QEMU = Path(os.environ.get("CSD_QEMU") or BUILD / "qemu" / "qemu-system-x86_64")  # CSD_QEMU: another build, to compare
FIRMWARE = BUILD / "share" / "qemu"   # where QEMU looks relative to its binary
IMAGES = BUILD / "images"
GUEST_TESTS = TOP / "tests" / "vm" / "guest"
PARTNERS = GUEST_TESTS / "partners"   # scripts of partner guests (setting partner=NAME)
GUEST_LIB = GUEST_TESTS / "lib.sh"     # helpers every guest test may source, whatever --dir says
HOST_CHECKS = TOP / "tests" / "vm" / "host"
MARK = "@@CSD "


# --------------------------------------------------------------------------- config
@dataclass
class VmConfig:
    """Device and guest settings for one boot."""

    csd: bool = True
    slm: str = "64M"
    cu: int = 2
    disk: str = "256M"
    lbads: int = 9
    memory: str = "1G"
    test_timeout: int = 120
    boot_timeout: int = 90
    extra_device: str = ""
    extra_qemu: list[str] = field(default_factory=list)
    drives: int = 1        # CSD controllers, each with its own namespace file (drives=N)
    alone: bool = False   # boot a guest for this test only (e.g. it reads power-on counters)
    solo: bool = False    # no other guest runs beside this one (it measures time on the guest's clock)
    peer: str = ""        # size of an ivshmem-plain peer device (file-backed BAR), e.g. 4M
    plugins: bool = False  # load the example operator plug-ins (csd.plugin-dir)
    write_log: str = ""    # log every write and flush of the namespace to this file (blklogwrites)
    partner: str = ""      # a second guest running tests/vm/guest/partners/NAME, linked by a network
    net: str = ""          # "server:PORT" / "client:PORT": virtio-net on a QEMU stream netdev
    subsys: bool = False   # the controller in an nvme-subsys, its namespace an nvme-ns device
                           # (nsid 1): Namespace Attachment works (nvme detach-ns / attach-ns)
    ns: str = ""           # more properties of that nvme-ns device (ns=ms=8,pi=1: protection
                           # information type 1; ns=zoned=on: a zoned namespace); implies subsys
    exact: bool = False    # csd.exact=on: completions exactly at the model's time (docs/timing-model.md)
    icount: str = ""       # QEMU -icount shift (a number or "auto"), sleep=off: guest time in instructions
    throttle: int = 0      # the namespace's backing file slowed to this many bytes/s (a planted host stall)

    def key(self) -> tuple:
        return (self.csd, self.slm, self.cu, self.disk, self.lbads, self.memory,
                self.extra_device, tuple(self.extra_qemu), self.peer, self.plugins, self.write_log, self.drives,
                self.partner, self.subsys, self.ns, self.exact, self.icount, self.throttle)

    def describe(self) -> str:
        s = f"csd={'on' if self.csd else 'off'}"
        if self.csd:
            s += f" slm={self.slm} cu={self.cu}"
        s += " exact" if self.exact else ""
        s += f" icount={self.icount}" if self.icount else ""
        return s + f" disk={self.disk} lba={1 << self.lbads}" + (f" ns={self.ns}" if self.ns else "")

    def apply(self, items: list[str]) -> "VmConfig":
        """A copy with ``key=value`` settings applied (keys: csd slm cu disk lbads memory timeout)."""
        cfg = replace(self)
        for item in items:
            k, _, v = item.partition("=")
            if k == "csd":
                cfg.csd = v in ("on", "1", "true", "yes")
            elif k in ("slm", "disk", "memory"):
                setattr(cfg, k, v)
            elif k in ("cu", "lbads", "drives"):
                setattr(cfg, k, int(v))
            elif k == "timeout":
                cfg.test_timeout = int(v)
            elif k == "device":
                cfg.extra_device = v
            elif k == "alone":
                cfg.alone = True
            elif k == "solo":
                cfg.alone = cfg.solo = True
            elif k == "peer":
                cfg.peer = v
            elif k == "plugins":
                cfg.plugins = True
            elif k == "subsys":
                cfg.subsys = True
            elif k == "ns":
                cfg.ns, cfg.subsys = v, True
            elif k == "exact":
                cfg.exact = True
            elif k == "throttle":
                cfg.throttle = parse_size(v)
            elif k == "icount":
                if not (v == "auto" or v.isdigit()):
                    raise ValueError(f"icount={v}: a shift (0..10) or auto")
                cfg.icount = v
            elif k == "partner":
                if not (PARTNERS / v).is_file():
                    raise ValueError(f"no partner guest script tests/vm/guest/partners/{v}")
                cfg.partner = v
            else:
                raise ValueError(f"unknown vm setting '{k}'")
        return cfg

    @staticmethod
    def from_header(text: str) -> list["VmConfig"]:
        """The configurations a guest test asks for: one per ``# vm: key=value ...`` line."""
        cfgs = [VmConfig().apply(m.group(1).split())
                for m in (re.match(r"#\s*vm:\s*(.*)", line) for line in text.splitlines()[:20]) if m]
        return cfgs or [VmConfig()]


def parse_size(text: str) -> int:
    """Turns '64M', '1G', '4096' into bytes."""
    m = re.fullmatch(r"(\d+)([KMGT]?)", text.strip().upper())
    if not m:
        raise ValueError(f"bad size '{text}'")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[m.group(2)]


def host_tsc_khz() -> int:
    """The host's TSC frequency in kHz as its kernel found it (dmesg 'tsc: Refined TSC
    clocksource calibration' or 'tsc: Detected'), 0 when unknown. Under TCG the guest's TSC
    is the host's (QEMU reads the host TSC), so the guest need not measure it: measured at
    boot on a busy machine it came out up to ten times too low, and the guest's clock ran
    that much fast (in-guest timeouts fired early, guest uptime 1,374 s after 140 s)."""
    try:
        log = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    m = (re.search(r"tsc: Refined TSC clocksource calibration: ([\d.]+) MHz", log)
         or re.search(r"tsc: Detected ([\d.]+) MHz processor", log))
    return int(float(m.group(1)) * 1000) if m else 0


def tsc_khz_arg(accel: str, icount: str = "") -> str:
    """The guest kernel's tsc_early_khz= under TCG where the host's TSC rate is known (the
    kernel's own refinement then moves it by 1 % at most); under -icount the TSC counts
    virtual nanoseconds (QEMU's cpu_get_ticks), so 1 GHz."""
    khz = 1000000 if icount else host_tsc_khz() if accel == "tcg" else 0
    return f" tsc_early_khz={khz}" if khz else ""


def pick_accel() -> str:
    """CSD_ACCEL (kvm or tcg) if set; else KVM where the CPU shows hardware virtualisation
    (vmx or svm) and /dev/kvm opens, TCG otherwise: a nested KVM without it (the lent
    machines) runs the guest far below TCG (docs/perf.md, "KVM against TCG")."""
    forced = os.environ.get("CSD_ACCEL")
    if forced:
        return forced
    try:
        flags = set(re.search(r"^flags\s*:(.*)$", Path("/proc/cpuinfo").read_text(), re.M).group(1).split())
        os.close(os.open("/dev/kvm", os.O_RDWR))
    except (OSError, AttributeError):
        return "tcg"
    return "kvm" if flags & {"vmx", "svm"} else "tcg"


# --------------------------------------------------------------------------- run archive
def cpio_newc(entries: list[tuple[str, int, bytes]]) -> bytes:
    """Builds a newc cpio archive from (path, mode, data) entries; directories have no data."""
    out = bytearray()
    ino = 1000

    def header(name: str, mode: int, size: int) -> None:
        nonlocal ino
        ino += 1
        nb = name.encode() + b"\0"
        fields = [ino, mode, 0, 0, 1, 0, size, 0, 0, 0, 0, len(nb), 0]
        out.extend(b"070701" + b"".join(b"%08X" % f for f in fields) + nb)
        out.extend(b"\0" * (-len(out) % 4))

    for name, mode, data in entries:
        header(name, mode, len(data))
        out.extend(data)
        out.extend(b"\0" * (-len(out) % 4))
    header("TRAILER!!!", 0, 0)
    out.extend(b"\0" * (-len(out) % 512))
    return bytes(out)


def guest_files() -> dict[str, Path]:
    """build/guest's files (filled by images/stage-guest.sh: bin/, lib/, python/) by guest path."""
    guest_dir = BUILD / "guest"
    if not guest_dir.is_dir():
        return {}
    return {f"/csd/{p.relative_to(guest_dir)}": p for p in sorted(guest_dir.rglob("*")) if p.is_file()}


def run_archive(main: str | None, env: dict[str, str], files: dict[str, Path]) -> bytes:
    """The per-run archive: /csd/main (none: a shell), /csd/env and files (guest -> host path).
    build/guest is read under images/stage-guest.sh's lock (shared): a staging under way in
    another terminal is waited for, and the folder it leaves is listed anew."""
    lock = None
    if (BUILD / "guest").is_dir():
        BUILD.mkdir(parents=True, exist_ok=True)
        lock = open(BUILD / "guest.lock", "a")
        fcntl.flock(lock, fcntl.LOCK_SH)
        staged = str(BUILD / "guest") + os.sep
        files = {g: h for g, h in files.items() if not str(h).startswith(staged)}
        files.update(guest_files())
    try:
        return _archive(main, env, files)
    finally:
        if lock:
            lock.close()


def _archive(main: str | None, env: dict[str, str], files: dict[str, Path]) -> bytes:
    """run_archive's cpio of files as they are now."""
    dirs: set[str] = {"csd"}
    entries: list[tuple[str, int, bytes]] = []
    for gpath, hpath in sorted(files.items()):
        parts = gpath.strip("/").split("/")
        for i in range(1, len(parts)):
            dirs.add("/".join(parts[:i]))
        mode = 0o100755 if os.access(hpath, os.X_OK) else 0o100644
        entries.append((gpath.strip("/"), mode, Path(hpath).read_bytes()))
    envtext = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items()))
    entries.append(("csd/env", 0o100644, envtext.encode()))
    if main is not None:
        entries.append(("csd/main", 0o100755, main.encode()))
    return cpio_newc([(d, 0o40755, b"") for d in sorted(dirs)] + entries)


def project_files() -> dict[str, Path]:
    """Guest-side files every run carries: test scripts, host-built binaries and libraries."""
    files: dict[str, Path] = {"/csd/tests/lib.sh": GUEST_LIB}
    for p in sorted(GUEST_TESTS.glob("*")):
        if p.is_file():
            files[f"/csd/tests/{p.name}"] = p
    files["/csd/tests/markdown_recipes.py"] = TOP / "tests" / "markdown_recipes.py"  # csd_recipes.py reads with it
    for p in sorted(PARTNERS.glob("*.sh")):  # what partner guests run
        files[f"/csd/partners/{p.name}"] = p
    for p in sorted((TOP / "docs").glob("*.md")):  # for the recipes test
        files[f"/csd/docs/{p.name}"] = p
    if (TOP / "README.md").is_file():  # its guest recipes, for the same test (a copy of tests/ alone has none)
        files["/csd/README.md"] = TOP / "README.md"
    for p in sorted((TOP / "bench" / "vm").glob("*.py")):  # guest-side benchmarks
        files[f"/csd/bench/{p.name}"] = p
    for p in sorted((TOP / "host" / "demo").glob("*.py")):  # make demo
        files[f"/csd/demo/{p.name}"] = p
    for p in sorted((TOP / "tests" / "matrix").glob("*.py")):  # the feature matrix's description
        files[f"/csd/matrix/{p.name}"] = p
    for p in sorted((TOP / "tests" / "matrix" / "results").glob("*.jsonl")):  # and its committed results
        files[f"/csd/matrix/results/{p.name}"] = p
    files.update(guest_files())
    return files


# --------------------------------------------------------------------------- the VM
LIVE: set["Vm"] = set()           # every QEMU started and not yet ended (killed on exit)
LIVE_LOCK = threading.Lock()


class Vm:
    """One QEMU process running the guest, its console read line by line."""

    def __init__(self, cfg: VmConfig, workdir: Path, disk: Path | None = None):
        self.cfg = cfg
        self.workdir = workdir
        self.disk = disk or workdir / "namespace.img"
        self.proc: subprocess.Popen | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.started = 0.0

    def ensure_disk(self) -> None:
        if not self.disk.exists():
            with open(self.disk, "wb") as f:
                f.truncate(parse_size(self.cfg.disk))

    def qemu_argv(self, initrd: Path, interactive: bool = False) -> list[str]:
        for need in (QEMU, FIRMWARE / "qboot.rom", IMAGES / "vmlinuz", IMAGES / "usr.img"):
            if not need.exists():
                raise SystemExit(f"csdvm: {need} is missing: run 'make qemu image' first")
        accel = pick_accel()
        serial = "csd0101" if self.cfg.net.startswith("server") else "csd0001"  # a partner's drive tells itself apart
        blocks = f"logical_block_size={1 << self.cfg.lbads},physical_block_size={1 << self.cfg.lbads}"
        # in a subsystem the namespace is a device of its own (nvme-ns), attached by nsid
        dev = (f"nvme,id=nvme0,serial={serial},subsys=subsys0" if self.cfg.subsys
               else f"nvme,id=nvme0,serial={serial},drive=nvm0,{blocks}")
        if self.cfg.csd:
            extra = self.cfg.extra_device
            dev += f",csd=on,csd.slm-size={parse_size(self.cfg.slm)}"
            # A timing model brings its own unit count; named units win over the harness's.
            if not re.search(r"(^|,)csd\.(compute-units|model)[.=]", extra):
                dev += f",csd.compute-units={self.cfg.cu}"
            if self.cfg.plugins:
                dev += f",csd.plugin-dir={BUILD / 'meson' / 'examples' / 'plugins'}"
            if extra:
                dev += "," + extra
            if self.cfg.exact:
                if "csd.model" not in dev:
                    raise SystemExit("csdvm: exact needs a timing model (--device-props csd.model=<preset> or a "
                                     "'# vm: device=csd.model...' header): without one there is no modelled time")
                dev += ",csd.exact=on"
        elif self.cfg.extra_device:
            dev += "," + self.cfg.extra_device
        if self.cfg.exact or self.cfg.icount:  # the guest's virtual clock held / counted: TCG's
            if os.environ.get("CSD_ACCEL", "tcg") != "tcg":
                raise SystemExit(f"csdvm: exact mode and -icount need TCG, not CSD_ACCEL={os.environ['CSD_ACCEL']}")
            accel = "tcg"
        argv = [
            str(QEMU), "-machine", f"q35,accel={accel}",
            "-cpu", "host" if accel == "kvm" else "max",
            # -icount runs the vCPUs in turn on one thread: one vCPU keeps the guest's own
            # wake-ups (IPIs between vCPUs) out of the counted time
            "-m", self.cfg.memory, "-smp", "1" if self.cfg.icount else "2",
            "-nodefaults", "-no-user-config", "-vga", "none", "-display", "none",
            "-bios", str(FIRMWARE / "qboot.rom"),
            "-kernel", str(IMAGES / "vmlinuz"), "-initrd", str(initrd),
            "-append", "console=ttyS0 quiet loglevel=3 panic=-1 8250.nr_uarts=1 "
                       "tsc=reliable no_timer_check mitigations=off" + tsc_khz_arg(accel, self.cfg.icount),
            "-no-reboot",
            "-drive", f"if=none,id=usr,file={IMAGES / 'usr.img'},format=raw,readonly=on",
            "-device", "virtio-blk-pci,drive=usr",
        ]
        if self.cfg.write_log:
            # Writes pass through to the disk and are logged, with every Flush, in order
            # (dm-log-writes format): tests/vm/crash_store.py replays the log as a drive
            # with a volatile write cache would have persisted it at a power cut.
            argv += ["-blockdev", f"driver=file,filename={self.disk},node-name=nvm0-disk",
                     "-blockdev", f"driver=file,filename={self.cfg.write_log},node-name=nvm0-log",
                     "-blockdev", f"driver=blklogwrites,node-name=nvm0,file=nvm0-disk,log=nvm0-log,"
                                  f"log-sector-size={1 << self.cfg.lbads}"]
        else:
            throttle = f",throttling.bps-total={self.cfg.throttle}" if self.cfg.throttle else ""
            argv += ["-drive", f"if=none,id=nvm0,file={self.disk},format=raw,cache=writeback{throttle}"]
        if self.cfg.subsys:
            if self.cfg.drives != 1:
                raise SystemExit("csdvm: subsys takes one drive")
            argv += ["-device", "nvme-subsys,id=subsys0,nqn=csd-subsys0", "-device", dev,
                     "-device", f"nvme-ns,drive=nvm0,nsid=1,bus=nvme0,{blocks}" + (f",{self.cfg.ns}" if self.cfg.ns else "")]
        else:
            argv += ["-device", dev]
        for i in range(1, self.cfg.drives):  # more controllers, alike, each over its own file
            disk = self.workdir / f"namespace{i}.img"
            with open(disk, "wb") as f:
                f.truncate(parse_size(self.cfg.disk))
            argv += ["-drive", f"if=none,id=nvm{i},file={disk},format=raw,cache=writeback",
                     "-device", dev.replace(f"id=nvme0,serial={serial},drive=nvm0",
                                            f"id=nvme{i},serial=csd{i + 1:04d},drive=nvm{i}")]
        if self.cfg.peer:  # a peer PCI device whose BAR 2 is the host file workdir/peer.mem
            argv += ["-object", f"memory-backend-file,id=peer,size={self.cfg.peer},"
                                f"mem-path={self.workdir / 'peer.mem'},share=on",
                     "-device", "ivshmem-plain,memdev=peer"]
        if self.cfg.net:  # virtio-net whose wire is a TCP stream over the host's loopback
            role, port = self.cfg.net.split(":")
            argv += ["-netdev", f"stream,id=link,server={'on' if role == 'server' else 'off'},addr.type=inet,"
                                f"addr.host=127.0.0.1,addr.port={port}"
                                + ("" if role == "server" else ",reconnect-ms=500"),
                     "-device", f"virtio-net-pci,romfile=,netdev=link,mac=52:54:00:c5:d0:{1 if role == 'server' else 2:02x}"]
        argv += ["-serial", "mon:stdio"] if interactive else ["-serial", "stdio", "-monitor", "none"]
        if self.cfg.icount:  # guest time counted in instructions, warping over idle time
            argv += ["-icount", f"shift={self.cfg.icount},sleep=off"]
        # CSD_QEMU_ARGS: more QEMU options for every guest (e.g. '-trace pci_nvme_csd_*'), to look inside
        return argv + self.cfg.extra_qemu + shlex.split(os.environ.get("CSD_QEMU_ARGS", ""))

    def make_initrd(self, main: str | None, env: dict[str, str], files: dict[str, Path]) -> Path:
        initrd = self.workdir / "initrd.cpio"
        with open(initrd, "wb") as f:
            f.write((IMAGES / "initramfs.cpio").read_bytes())
            f.write(run_archive(main, env, files))
        return initrd

    def start(self, main: str, env: dict[str, str], files: dict[str, Path]) -> None:
        self.ensure_disk()
        argv = self.qemu_argv(self.make_initrd(main, env, files))
        if os.environ.get("CSD_VM_VERBOSE"):
            print("csdvm: " + shlex.join(argv), flush=True)
        self.started = time.monotonic()
        with LIVE_LOCK:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, start_new_session=True)
            LIVE.add(self)
        threading.Thread(target=self._reader, daemon=True).start()

    def cpu_seconds(self) -> float:
        """CPU time QEMU has used so far (all its threads, user and system): the cost of a
        test that waiting on a busy machine does not inflate."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:  # type: ignore[union-attr]
                w = f.read().rsplit(")", 1)[1].split()
            return (int(w[11]) + int(w[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError, AttributeError):
            return 0.0

    def threads_state(self) -> str:
        """QEMU's threads as /proc shows them (name, state, where each sleeps in the kernel):
        what a guest that printed nothing was waiting on, for the log of a timed-out boot."""
        out = []
        try:
            task = f"/proc/{self.proc.pid}/task"  # type: ignore[union-attr]
            for tid in sorted(os.listdir(task), key=int):
                try:
                    with open(f"{task}/{tid}/stat") as f:
                        w = f.read().rsplit(")", 1)
                    name = w[0].split("(", 1)[1]
                    with open(f"{task}/{tid}/wchan") as f:
                        wchan = f.read().strip() or "-"
                    fields = w[1].split()
                    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
                    out.append(f"{name}:{fields[0]}:{wchan}:{cpu:.1f}s")
                except (OSError, IndexError, ValueError):
                    continue
        except (OSError, AttributeError):
            return "(QEMU gone)"
        return " ".join(out)

    def _reader(self) -> None:
        assert self.proc and self.proc.stdout
        buf = b""
        while True:
            chunk = self.proc.stdout.read1(65536)
            if not chunk:
                break
            buf += chunk
            *done, buf = buf.split(b"\n")
            for raw in done:
                self.lines.put(raw.decode("utf-8", "replace").rstrip("\r"))
        if buf:
            self.lines.put(buf.decode("utf-8", "replace"))
        self.lines.put(None)

    def send(self, text: str) -> None:
        """Writes a line to the guest console."""
        assert self.proc and self.proc.stdin
        try:
            self.proc.stdin.write(text.encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass

    def kill(self) -> None:
        """Ends QEMU (and anything it started) whatever state it is in."""
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc:
            self.proc.wait()
        with LIVE_LOCK:
            LIVE.discard(self)


def kill_all() -> None:
    """Ends every QEMU still running (an interrupted run must leave none behind)."""
    with LIVE_LOCK:
        vms = list(LIVE)
    for vm in vms:
        vm.kill()


# --------------------------------------------------------------------------- running
@dataclass
class TestResult:
    name: str
    passed: bool
    seconds: float
    why: str = ""
    skipped: int = 0                                   # tests a guest runner (pytest) skipped
    skip_reasons: list[str] = field(default_factory=list)
    cpu: float = 0.0                                   # QEMU's CPU seconds during the test


ANSI = re.compile(r"\x1b\[[0-9;]*m")
PYTEST_SUMMARY = re.compile(r"\b(\d+) passed.*?\b(\d+) skipped|\b(\d+) skipped.*? in [\d.]+s")
PYTEST_SKIP = re.compile(r"^SKIPPED \[\d+\] (.*)")


GUEST_RUNNER = r"""#!/bin/sh
# Runs the guest tests named in /csd/tests/list ("NAME SECONDS" lines), each under its own timeout.
stty -echo 2>/dev/null
while read t secs; do
    echo "@@CSD BEGIN $t $secs"
    ( cd /tmp && exec timeout -s KILL "$secs" sh /csd/tests/$t ) < /dev/console
    echo "@@CSD END $t $?"
done < /csd/tests/list
"""


# Results a guest test reports ('@@CSD RESULT NAME JSON'), one file of JSON lines per NAME
# under RESULTS (the feature matrix's, tests/matrix/), each begun anew by the run.
RESULTS = Path(os.environ.get("CSD_RESULTS_DIR") or BUILD / "results")
RESULTS_BEGUN: set[str] = set()
RESULTS_LOCK = threading.Lock()


def keep_result(line: str) -> None:
    """Appends a guest's '@@CSD RESULT NAME JSON' line's JSON to RESULTS/NAME.jsonl."""
    words = line[len(MARK + "RESULT "):].split(" ", 1)
    if len(words) != 2 or not re.fullmatch(r"[A-Za-z0-9_.-]+", words[0]):
        return
    with RESULTS_LOCK:
        RESULTS.mkdir(parents=True, exist_ok=True)
        mode = "a" if words[0] in RESULTS_BEGUN else "w"
        RESULTS_BEGUN.add(words[0])
        with open(RESULTS / f"{words[0]}.jsonl", mode) as f:
            f.write(words[1].strip() + "\n")


def run_host_check(line: str, vm: Vm) -> int:
    """Runs tests/vm/host/NAME.sh ARGS for a guest's '@@CSD HOSTCHECK NAME ARGS' line."""
    words = line[len(MARK + "HOSTCHECK "):].split()
    if not words or not re.fullmatch(r"[A-Za-z0-9_.-]+", words[0]):
        return 2
    script = HOST_CHECKS / f"{words[0]}.sh"
    if not script.exists():
        print(f"csdvm: no host check {script}", flush=True)
        return 2
    env = dict(os.environ, CSD_DISK=str(vm.disk), CSD_WORKDIR=str(vm.workdir))
    r = subprocess.run(["bash", str(script), *words[1:]], env=env, timeout=120)
    return r.returncode


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, seconds: float = 20) -> None:
    """Waits until a local TCP socket listens on port (without connecting to it)."""
    want = f":{port:04X}"
    end = time.monotonic() + seconds
    while time.monotonic() < end and proc.poll() is None:
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                w = line.split()
                if w[1].endswith(want) and w[3] == "0A":  # 0A: LISTEN
                    return
        time.sleep(0.05)
    raise RuntimeError(f"partner guest's QEMU did not listen on 127.0.0.1:{port}")


def start_partner(cfg: VmConfig, workdir: Path, log) -> tuple[Vm, int]:
    """Boots the partner guest of cfg (its script from tests/vm/guest/partners, the server end of
    the link) and logs its console; returns it and the port the other guest connects to."""
    port = free_port()
    workdir.mkdir()
    partner = Vm(replace(cfg, partner="", net=f"server:{port}"), workdir)
    log(f"csdvm: booting partner guest ({cfg.partner}, link 127.0.0.1:{port})")
    partner.start(f"#!/bin/sh\nstty -echo 2>/dev/null\nsh /csd/partners/{cfg.partner}\n", {}, project_files())

    def relay() -> None:
        while (line := partner.lines.get()) is not None:
            log(f"    partner| {line}")
    threading.Thread(target=relay, daemon=True).start()
    assert partner.proc
    try:
        wait_listening(port, partner.proc)
    except BaseException:
        partner.kill()
        raise
    return partner, port


def run_group(cfg: VmConfig, tests: list[str], log=print,
              timeouts: dict[str, int] | None = None) -> list[TestResult]:
    """Boots one guest with cfg and runs the named guest tests in it, each under its own
    timeout (timeouts[name], else cfg's): tests that share a guest keep their own limits."""
    results: list[TestResult] = []
    limit = {t: (timeouts or {}).get(t, cfg.test_timeout) for t in tests}
    with tempfile.TemporaryDirectory(prefix="csdvm-") as tmp:
        partner = None
        if cfg.partner:
            partner, port = start_partner(cfg, Path(tmp) / "partner", log)
            cfg = replace(cfg, net=f"client:{port}")
        vm = Vm(cfg, Path(tmp))
        files = project_files()
        tlist = Path(tmp) / "list"
        tlist.write_text("".join(f"{t} {limit[t]}\n" for t in tests))
        files["/csd/tests/list"] = tlist
        env: dict[str, str] = {"CSD_VM_EXACT": "1"} if cfg.exact else {}  # the tests' timing checks ask
        log(f"csdvm: booting guest ({cfg.describe()}, accel {pick_accel()}) for {len(tests)} test(s)")
        vm.start(GUEST_RUNNER, env, files)
        current: str | None = None
        began = cpu0 = 0.0
        deadline = vm.started + cfg.boot_timeout
        first_test_at = None
        pending = list(tests)
        skips: dict[str, tuple[int, list[str]]] = {}  # per test: pytest skips and their reasons
        try:
            while True:
                try:
                    line = vm.lines.get(timeout=max(0.05, deadline - time.monotonic()))
                except queue.Empty:
                    line = ""
                now = time.monotonic()
                if line is None:
                    why = "guest stopped" + (f" during {current}" if current else "")
                    if current:
                        results.append(TestResult(current, False, now - began, why))
                        pending.remove(current)
                    break
                if now >= deadline:
                    what = f"test {current} timed out" if current else "boot timed out"
                    log(f"csdvm: {what}; killing QEMU (QEMU CPU {vm.cpu_seconds():.1f} s; "
                        f"threads name:state:wchan:cpu {vm.threads_state()})")
                    if current:
                        results.append(TestResult(current, False, now - began, "timeout"))
                        pending.remove(current)
                    break
                if not line:
                    continue
                if line.startswith(MARK + "BEGIN "):
                    current = line.split()[2]
                    began = now
                    cpu0 = vm.cpu_seconds()
                    deadline = now + limit.get(current, cfg.test_timeout) + 15
                    if first_test_at is None:
                        first_test_at = now - vm.started
                        log(f"csdvm: guest up, first test after {first_test_at:.2f} s (QEMU CPU {vm.cpu_seconds():.1f} s)")
                    log(f"--- {current}")
                elif line.startswith(MARK + "END "):
                    _, _, name, rc = line.split()[:4]
                    ok = rc == "0"
                    n_skipped, reasons = skips.get(name, (0, []))
                    cpu = vm.cpu_seconds() - cpu0
                    results.append(TestResult(name, ok, now - began, "" if ok else f"exit {rc}",
                                              n_skipped, reasons, cpu=cpu))
                    pending.remove(name)
                    log(f"{'PASS' if ok else 'FAIL'} {name} ({now - began:.1f} s, QEMU CPU {cpu:.1f} s)")
                    current = None
                    deadline = now + cfg.test_timeout + 15
                elif line.startswith(MARK + "RESULT "):
                    keep_result(line)
                elif line.startswith(MARK + "HOSTCHECK "):
                    rc = run_host_check(line, vm)
                    vm.send(f"@@HOST {rc}")
                elif line.startswith(MARK + "EXIT") or line.startswith(MARK + "FATAL"):
                    log(line)
                    if "FATAL" in line:
                        break
                elif line.startswith("@@HOST"):
                    continue
                else:
                    log(f"    {line}")
                    if current:
                        plain = ANSI.sub("", line).strip()
                        n, reasons = skips.get(current, (0, []))
                        m = PYTEST_SUMMARY.search(plain)
                        if m:
                            n += int(m.group(2) or m.group(3))
                        m = PYTEST_SKIP.match(plain)
                        if m:
                            reasons = reasons + [m.group(1)]
                        skips[current] = (n, reasons)
        finally:
            vm.kill()
            if partner:
                partner.kill()
    for name in pending:
        results.append(TestResult(name, False, 0.0, "not run (guest ended early)"))
    return results


def collect_tests(names: list[str], pattern: str | None) -> list[Path]:
    if names:
        paths = [GUEST_TESTS / Path(n).name for n in names]
    else:
        paths = sorted(p for p in GUEST_TESTS.glob("*.sh") if p.name != "lib.sh")
    if pattern:
        paths = [p for p in paths if re.search(pattern, p.name)]
    for p in paths:
        if not p.exists():
            raise SystemExit(f"csdvm: no guest test {p}")
    return paths


# Each guest test's last wall time, to start the longest first: kept with the project's
# other caches, so that a clean clone (CI's) orders its first run by the last one's times.
TIMES = Path(os.environ.get("CSD_CACHE") or Path.home() / ".cache" / "nvme-csd") / "vm-times.json"
BOOT_ESTIMATE = 10.0              # seconds a boot takes, for the order of groups


def load_times() -> dict[str, float]:
    """Wall seconds of each guest test in earlier runs (empty when none were kept)."""
    try:
        return {k: float(v) for k, v in json.loads(TIMES.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def save_times(results: list["TestResult"], times: dict[str, float]) -> None:
    """Keeps this run's wall time of every test that passed (a failure may end it early)."""
    for r in results:
        if r.passed and r.seconds > 0:
            times[r.name.split(" [")[0]] = round(r.seconds, 1)
    try:
        TIMES.parent.mkdir(parents=True, exist_ok=True)
        TIMES.write_text(json.dumps(dict(sorted(times.items())), indent=0) + "\n")
    except OSError:
        pass


@dataclass
class Group:
    """The tests that share one boot, and what they take of the machine."""

    cfg: VmConfig
    tests: list[str]
    timeouts: dict[str, int]
    tag: str = ""
    estimate: float = 0.0

    def places(self, jobs: int) -> int:
        """Places (of --jobs) the boot takes: one per guest, all of them for a solo one."""
        return jobs if self.cfg.solo else min(jobs, 2 if self.cfg.partner else 1)


def default_jobs() -> int:
    """Guests at once: CSD_VM_JOBS, else one per core (TCG is one host thread per busy vCPU),
    at most as many as memory holds (each guest takes about its -m plus 0.5 GiB)."""
    if os.environ.get("CSD_VM_JOBS"):
        return max(1, int(os.environ["CSD_VM_JOBS"]))
    try:
        with open("/proc/meminfo") as f:
            avail = next(int(l.split()[1]) for l in f if l.startswith("MemAvailable:")) >> 20
    except (OSError, StopIteration, ValueError):
        avail = 4
    return max(1, min(os.cpu_count() or 1, int(avail // 2)))


def plan_groups(paths: list[Path], times: dict[str, float], jobs: int = 1) -> list[Group]:
    """The boots a run needs: tests whose header lines ask for the same device share one
    (an ``alone`` test has its own; a boot that would take more than its share of a run with
    jobs places is split in two), longest expected first (earlier runs' times; a test never
    timed counts as a quarter of its timeout)."""
    groups: dict[tuple, Group] = {}
    for p in paths:
        for cfg in VmConfig.from_header(p.read_text()):
            key = cfg.key() + ((p.name,) if cfg.alone else ())
            g = groups.setdefault(key, Group(cfg, [], {}))
            g.tests.append(p.name)
            g.timeouts[p.name] = cfg.test_timeout
    cost = {t: times.get(t, g.timeouts[t] / 4) for g in groups.values() for t in g.tests}
    out: list[Group] = []
    fair = (BOOT_ESTIMATE * len(groups) + sum(cost.values())) / max(1, jobs)
    for g in groups.values():
        # A boot longer than its fair share of a run with jobs places would alone set the
        # run's length: its tests are dealt, longest first, to two boots of the same device.
        if jobs > 1 and len(g.tests) > 1 and BOOT_ESTIMATE + sum(cost[t] for t in g.tests) > fair:
            halves: list[list[str]] = [[], []]
            for t in sorted(g.tests, key=lambda t: -cost[t]):
                min(halves, key=lambda h: sum(cost[x] for x in h)).append(t)
            out += [Group(g.cfg, [t for t in g.tests if t in h], {t: g.timeouts[t] for t in h}) for h in halves]
        else:
            out.append(g)
    for i, g in enumerate(out):
        g.tag = f"g{i + 1}"
        g.estimate = BOOT_ESTIMATE + sum(cost[t] for t in g.tests)
    return sorted(out, key=lambda g: (-g.estimate, g.tag))


def run_groups(groups: list[Group], jobs: int) -> list["TestResult"]:
    """Runs the boots, as many at once as their places allow within jobs, each next boot the
    longest that fits; with more than one at once every line carries its boot's tag."""
    results: list[TestResult] = []
    lock = threading.Lock()
    done = threading.Condition(lock)
    free = jobs
    pending = list(groups)
    running = 0

    def logger(g: Group):
        def log(text: str) -> None:
            with lock:
                if jobs > 1 and not re.match(r"(PASS|FAIL) ", text):
                    text = f"[{g.tag}] {text}"
                print(text, flush=True)
        return log

    def worker(g: Group) -> None:
        nonlocal free, running
        try:
            rs = run_group(g.cfg, g.tests, log=logger(g), timeouts=g.timeouts)
        except Exception as e:  # a boot that could not start fails its tests, not the run
            rs = [TestResult(t, False, 0.0, f"harness error: {e}") for t in g.tests]
        with done:
            for r in rs:
                r.name += f" [{g.cfg.describe()}]"
            results.extend(rs)
            free += g.places(jobs)
            running -= 1
            done.notify_all()

    if jobs > 1:
        print(f"csdvm: {len(groups)} boot(s), up to {jobs} at once: "
              + "; ".join(f"{g.tag} {' '.join(g.tests)}" for g in groups), flush=True)
    try:
        with done:
            while pending or running:
                fit = next((g for g in pending if g.places(jobs) <= free), None)
                if fit is None:
                    done.wait()
                    continue
                pending.remove(fit)
                free -= fit.places(jobs)
                running += 1
                threading.Thread(target=worker, args=(fit,), daemon=True).start()
    finally:
        kill_all()
    return results


def cmd_test(args) -> int:
    global GUEST_TESTS
    if args.dir:
        GUEST_TESTS = Path(args.dir).resolve()
    times = load_times()
    jobs = args.jobs or default_jobs()
    groups = plan_groups(collect_tests(args.tests, args.filter), times, jobs)
    start = time.monotonic()
    results = run_groups(groups, jobs)
    if not args.dir:
        save_times(results, times)
    failed = [r for r in results if not r.passed]
    for r in failed:
        print(f"FAILED {r.name}: {r.why}")
    for r in results:
        if r.skipped:
            print(f"SKIPPED inside {r.name}: {r.skipped} ({'; '.join(sorted(set(r.skip_reasons))) or 'no reason given'})")
    print(f"csdvm: {len(groups)} boot(s), {jobs} at once, in {time.monotonic() - start:.0f} s; "
          f"QEMU CPU in tests {sum(r.cpu for r in results):.0f} s")
    skipped = sum(r.skipped for r in results)
    print(f"{args.suite_name}: {len(results) - len(failed)} passed, {len(failed)} failed, {skipped} skipped")
    return 1 if failed or not results else 0


def cli_config(args) -> VmConfig:
    """The device and guest settings that `cmd` and `shell` were given."""
    props = args.device_props.strip(",")
    if props.startswith("-device") or "nvme," in props:
        raise SystemExit("csdvm: --device-props takes the nvme device's extra properties only, "
                         "e.g. 'csd.nvme-cs=on,csd.model=gen4x4-8core'")
    if args.drives < 1 or args.drives > 8:
        raise SystemExit(f"csdvm: --drives must be 1..8 (got {args.drives})")
    return VmConfig(csd=not args.no_csd, slm=args.slm, cu=args.compute_units, disk=args.disk_size,
                    lbads=args.lbads, memory=args.memory, extra_device=props, drives=args.drives,
                    plugins=args.plugins, subsys=args.subsys or bool(args.ns), ns=args.ns, exact=args.exact,
                    icount=args.icount)


def cmd_run(args) -> int:
    """Runs one shell command in a guest and returns its exit status."""
    cfg = cli_config(args)
    with tempfile.TemporaryDirectory(prefix="csdvm-") as tmp:
        disk = Path(args.disk) if args.disk else None
        vm = Vm(cfg, Path(tmp), disk)
        main = "#!/bin/sh\nstty -echo 2>/dev/null\ncd /root\n" + args.command + "\n"
        vm.start(main, {}, project_files())
        status = 1
        deadline = vm.started + args.timeout
        try:
            while True:
                try:
                    line = vm.lines.get(timeout=max(0.05, deadline - time.monotonic()))
                except queue.Empty:
                    print(f"csdvm: command timed out after {args.timeout} s", file=sys.stderr)
                    break
                if line is None:
                    break
                if line.startswith(MARK + "EXIT "):
                    status = int(line.split()[2])
                elif line.startswith(MARK + "FATAL"):
                    print(line, file=sys.stderr)
                elif not re.search(r"\] reboot: Power down$", line):  # the guest's goodbye
                    print(line, flush=True)
        finally:
            vm.kill()
    return status


def cmd_shell(args) -> int:
    """Interactive guest shell on this terminal (QEMU's mux: Ctrl-a x quits)."""
    cfg = cli_config(args)
    workdir = Path(tempfile.mkdtemp(prefix="csdvm-"))
    disk = Path(args.disk) if args.disk else BUILD / "vm-namespace.img"
    vm = Vm(cfg, workdir, disk)
    vm.ensure_disk()
    initrd = vm.make_initrd(None, {}, project_files())
    print(f"csdvm: namespace backed by {disk} ({cfg.describe()}); Ctrl-a x quits", flush=True)
    try:
        return subprocess.call(vm.qemu_argv(initrd, interactive=True))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    t = sub.add_parser("test", help="run guest tests")
    t.add_argument("tests", nargs="*")
    t.add_argument("--filter", help="regular expression on test file names")
    t.add_argument("--dir", help="folder of guest tests (default tests/vm/guest)")
    t.add_argument("--suite-name", default="vm", help="name on the closing line (default vm)")
    t.add_argument("--jobs", "-j", type=int, default=0,
                   help="guests at once (default: $CSD_VM_JOBS, else one per core as memory allows)")
    for name in ("cmd", "shell"):
        c = sub.add_parser(name, help="run one command" if name == "cmd" else "interactive shell")
        if name == "cmd":
            c.add_argument("command")
            c.add_argument("--timeout", type=int, default=600)
        c.add_argument("--disk", help="backing file of the namespace (kept)")
        c.add_argument("--disk-size", default="256M")
        c.add_argument("--slm", default="64M")
        c.add_argument("--no-csd", action="store_true", help="stock nvme device (csd=off)")
        c.add_argument("--lbads", type=int, default=9, help="log2 of the LBA size (9: 512 B, 12: 4 KiB)")
        c.add_argument("--memory", default="1G", help="guest memory")
        c.add_argument("--device-props", default=os.environ.get("CSD_PROPS", ""),
                       help="more properties of the nvme device, e.g. 'csd.nvme-cs=on,csd.model=gen4x4-8core' "
                            "(default: $CSD_PROPS)")
        c.add_argument("--drives", type=int, default=int(os.environ.get("CSD_DRIVES", "1")),
                       help="CSD controllers, each over its own namespace file (default: $CSD_DRIVES or 1)")
        c.add_argument("--compute-units", type=int, default=2,
                       help="csd.compute-units, unless --device-props names it or a timing model")
        c.add_argument("--plugins", action="store_true",
                       help="load the example operator plug-ins (csd.plugin-dir)")
        c.add_argument("--exact", action="store_true", default=os.environ.get("CSD_EXACT", "") not in ("", "0"),
                       help="csd.exact=on (needs a model in --device-props): every completion exactly at the "
                            "model's time, the guest held while the host is slower (TCG; default: $CSD_EXACT)")
        c.add_argument("--icount", default=os.environ.get("CSD_ICOUNT", ""),
                       help="QEMU -icount shift=N,sleep=off (N or auto): guest time counted in instructions, "
                            "deterministic (default: $CSD_ICOUNT)")
        c.add_argument("--subsys", action="store_true",
                       help="the controller in an nvme-subsys and its namespace an nvme-ns device "
                            "(nvme detach-ns / attach-ns work)")
        c.add_argument("--ns", default="",
                       help="more properties of that nvme-ns device, e.g. 'ms=8,pi=1' or 'zoned=on' (implies --subsys)")
    args = ap.parse_args()
    # SIGTERM (a CI job's timeout, kill) ends the run through its cleanup: no QEMU left behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return {"test": cmd_test, "cmd": cmd_run, "shell": cmd_shell}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
