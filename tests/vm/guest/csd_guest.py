# SPDX-License-Identifier: MIT
"""Guest-side helpers for the CSD tests: NVMe passthrough through the kernel's
NVME_IOCTL_IO64_CMD on /dev/ng0n1 (64-bit result: Dwords 0 and 1), descriptors, and a
tiny check runner that prints one line per check and exits non-zero on any failure."""

import ctypes
import fcntl
import mmap
import os
import re
import struct
import subprocess
import sys
import time

NG = "/dev/ng0n1"
NVME_IOCTL_IO64_CMD = 0xC0504E48      # _IOWR('N', 0x48, struct nvme_passthru_cmd64)
NVME_IOCTL_ADMIN64_CMD = 0xC0504E47   # _IOWR('N', 0x47, struct nvme_passthru_cmd64)

SLM_LOAD, SLM_WRITE, SLM_READ, SLM_STORE, EXECUTE = 0x80, 0x81, 0x82, 0x84, 0x85
SUCCESS = 0
INVALID_OPCODE, INVALID_FIELD, LBA_OUT_OF_RANGE = 0x001, 0x002, 0x080
INVALID_PROGRAM, INVALID_DESCRIPTOR, SLM_OUT_OF_BOUNDS = 0x1C0, 0x1C1, 0x1C2
INVALID_PARAMETERS, OUTPUT_OVERFLOW, PROGRAM_FAULT = 0x1C3, 0x1C4, 0x1C5
DNR = 0x4000


class Result:
    def __init__(self, status, result, data):
        self.status = status          # NVMe status field (SCT/SC, DNR), 0 on success
        self.code = status & 0x7FF
        self.dnr = bool(status & DNR)
        self.dw0 = result & 0xFFFFFFFF
        self.dw1 = result >> 32
        self.data = data


def passthru(opcode, *, nsid=1, cdw=None, write=None, read_len=0, admin=False, dev=NG):
    """Submits one command; returns its Result. write: bytes to send; read_len: bytes to get."""
    cdw = cdw or {}
    length = len(write) if write is not None else read_len
    # The data buffer: page-aligned, so that an MDTS-sized transfer (512 KiB: 128 pages) fits
    # the 128 segments Linux's NVMe driver allows (a malloc'd one starts inside a page and
    # spans 129: EINVAL), and every page touched before the command, so that the ioctl does
    # not also fault in pages the guest never used (the guest's own cost, several ms at
    # 512 KiB under TCG: docs/timing-model.md).
    mem = mmap.mmap(-1, length) if length else None
    if mem is not None:
        mem.write(bytes(write) if write is not None else bytes(length))
    buf = (ctypes.c_char * length).from_buffer(mem) if mem is not None else None
    addr = ctypes.addressof(buf) if buf is not None else 0
    cmd = bytearray(struct.pack("<BBHIIIQQII6III Q", opcode, 0, 0, nsid, 0, 0, 0, addr, 0, length,
                                *[cdw.get(i, 0) & 0xFFFFFFFF for i in range(10, 16)], 0, 0, 0))
    assert len(cmd) == 80
    fd = os.open(dev, os.O_RDWR)
    try:
        t0 = time.perf_counter_ns()
        rc = fcntl.ioctl(fd, NVME_IOCTL_ADMIN64_CMD if admin else NVME_IOCTL_IO64_CMD, cmd)
        took = time.perf_counter_ns() - t0
    finally:
        os.close(fd)
    result = struct.unpack_from("<Q", cmd, 72)[0]
    data = bytes(buf[:read_len]) if read_len else b""
    del buf
    r = Result(rc, result, data)
    r.start, r.ns = t0, took  # the ioctl alone (CLOCK_MONOTONIC): submission to completion
    return r


def slm_write(off, data):
    return passthru(SLM_WRITE, cdw={10: off & 0xFFFFFFFF, 11: off >> 32, 12: len(data)}, write=data)


def slm_read(off, n):
    return passthru(SLM_READ, cdw={10: off & 0xFFFFFFFF, 11: off >> 32, 12: n}, read_len=n)


def slm_load(slba, nlb, off):
    return passthru(SLM_LOAD, cdw={10: slba & 0xFFFFFFFF, 11: slba >> 32, 12: nlb - 1,
                                   13: off & 0xFFFFFFFF, 14: off >> 32})


def slm_store(slba, nlb, off):
    return passthru(SLM_STORE, cdw={10: slba & 0xFFFFFFFF, 11: slba >> 32, 12: nlb - 1,
                                    13: off & 0xFFFFFFFF, 14: off >> 32})


def descriptor(program, ranges, params=b"", *, magic=b"CSDX", version=1, flags=0, nr=None):
    d = struct.pack("<4sHHHHI", magic, version, program, len(ranges) if nr is None else nr, flags, len(params))
    for off, length in ranges:
        d += struct.pack("<QQ", off, length)
    return d + params


def execute(program, ranges, params=b"", cdw10=None, **kw):
    d = descriptor(program, ranges, params, **kw)
    return passthru(EXECUTE, cdw={10: len(d) if cdw10 is None else cdw10}, write=d)


def get_log(lid, length=4096, nsid=0xFFFFFFFF):
    numd = length // 4 - 1
    return passthru(0x02, admin=True, nsid=nsid, dev="/dev/nvme0",
                    cdw={10: lid | (numd & 0xFFFF) << 16, 11: numd >> 16}, read_len=length)


def stats():
    """The Statistics log page as a dict of counters, plus 'per_program' (list of 256)."""
    names = ["slm_load_cmds", "slm_store_cmds", "slm_write_cmds", "slm_read_cmds", "exec_cmds",
             "exec_errors", "bytes_namespace_to_slm", "bytes_slm_to_namespace", "bytes_host_to_slm",
             "bytes_slm_to_host", "exec_busy_ns", "program_load_cmds", "program_unload_cmds",
             "program_load_rejects", "model_link_in_busy_ns", "model_link_out_busy_ns",
             "model_media_busy_ns", "model_slm_busy_ns", "model_compute_busy_ns", "model_delay_ns",
             "model_overruns", "model_holds", "model_hold_ns"]
    page = get_log(0xC1).data
    vals = struct.unpack_from(f"<{len(names)}Q", page, 8)
    d = dict(zip(names, vals))
    d["per_program"] = list(struct.unpack_from("<256Q", page, 256))
    d["magic"] = page[:4]
    return d


def cntlid():
    """The controller's ID (Identify Controller's CNTLID), as attach-ns and detach-ns name it."""
    out = subprocess.run(["nvme", "id-ctrl", "/dev/nvme0"], capture_output=True, text=True).stdout
    return int(re.search(r"^cntlid\s*:\s*(\S+)", out, re.M).group(1), 0)


def wait_for(path, present, seconds=30):
    """Waits until path exists (present) or is gone; False if it did not within seconds."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if os.path.exists(path) == present:
            return True
        time.sleep(0.2)
    return False


class Checks:
    """Counts named checks; report() prints the total and exits 1 on any failure."""

    def __init__(self):
        self.failed = 0
        self.passed = 0

    def ok(self, cond, what):
        if cond:
            self.passed += 1
            print(f"ok   {what}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {what}", flush=True)
        return cond

    def status(self, r, code, what):
        """Checks a Result's status code, and that errors carry DNR."""
        good = r.code == code and (code == 0 or r.dnr)
        return self.ok(good, f"{what}: status 0x{r.code:03x}{' DNR' if r.dnr else ''}"
                             + ("" if good else f" (want 0x{code:03x} with DNR)"))

    def report(self):
        print(f"{self.passed} checks passed, {self.failed} failed")
        sys.exit(1 if self.failed else 0)
