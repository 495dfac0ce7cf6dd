# SPDX-License-Identifier: MIT
"""Guest test: CSD detection, SLM data movement, error statuses and statistics."""
import os
import struct
import subprocess

from csd_guest import *

c = Checks()
SLM = 16 << 20
LBA = 4096

# --- detection
idc = passthru(0x06, admin=True, nsid=0, dev="/dev/nvme0", cdw={10: 1}, read_len=4096)
c.ok(idc.status == 0 and idc.data[3072:3076] == b"CSD1", "Identify Controller VS bytes 3072..3075 = CSD1")
eff = get_log(0x05, nsid=0)
acs = struct.unpack_from("<256I", eff.data, 0)
iocs = struct.unpack_from("<256I", eff.data, 1024)
c.ok(all(iocs[o] & 1 for o in (0x80, 0x81, 0x82, 0x84, 0x85, 0x89, 0x8C)),
     "effects log: CSUPP for 80h 81h 82h 84h 85h 89h 8Ch")
c.ok(iocs[0x84] & 2 and not iocs[0x80] & 2, "effects log: LBCC for SLM Store only")
caps = get_log(0xC0).data
magic, ver, slm_size, cu, max_desc, max_ranges, nprog, max_prog, slots, types = \
    struct.unpack_from("<4sIQIIIIIHH", caps)
c.ok((magic, ver, slm_size, cu, max_desc) == (b"CSD1", 0x10001, SLM, 2, 4096) and max_ranges >= 8,
     f"capabilities 1.1: slm {slm_size} cu {cu} max_desc {max_desc} max_ranges {max_ranges}")
c.ok(max_prog >= 1 << 20 and slots == 256 and types == 2,
     f"capabilities 1.1: max_program_bytes {max_prog}, {slots} slots, program types {types:#x}")
names = [caps[64 + 32 * i + 8:64 + 32 * i + 32].rstrip(b"\0").decode() for i in range(nprog)]
c.ok(names == ["copy", "gemm", "elementwise", "softmax", "reduce", "filter", "convert", "checksum",
               "conv2d", "decompress", "gather", "embedding_bag"], "capabilities: the twelve programs by name")
c.status(get_log(0xC0, nsid=1), INVALID_FIELD, "capabilities log with NSID 1")
# nvme-cli's own view of the same
out = subprocess.run(["nvme", "get-log", "/dev/nvme0", "--log-id=0xc0", "--log-len=64", "-b"],
                     stdout=subprocess.PIPE, check=True).stdout
c.ok(out[:4] == b"CSD1", "nvme get-log --log-id=0xc0 reads the capabilities")

# --- SLM Write / Read
pattern = os.urandom(8192)
c.status(slm_write(4096, pattern), SUCCESS, "SLM Write 8 KiB")
r = slm_read(4096, 8192)
c.ok(r.status == 0 and r.data == pattern, "SLM Read returns what SLM Write wrote")
c.status(slm_write(SLM - 4, b"abcd"), SUCCESS, "SLM Write of the last 4 bytes")
c.status(slm_write(SLM - 4, b"abcdefgh"), SLM_OUT_OF_BOUNDS, "SLM Write past the end")
c.status(slm_read((1 << 64) - 4, 8), SLM_OUT_OF_BOUNDS, "SLM Read whose range wraps 2^64")
c.status(slm_write(2, b"abcd"), INVALID_FIELD, "SLM Write at a misaligned offset")
c.status(slm_write(0, b"abcdef"), INVALID_FIELD, "SLM Write of a length not a multiple of 4")
c.status(passthru(SLM_READ, cdw={10: 0, 12: 0}), INVALID_FIELD, "SLM Read of length 0")

# --- SLM Load / Store against the namespace (4 KiB LBAs)
blockdata = os.urandom(4 * LBA)
with open("/dev/nvme0n1", "r+b", buffering=0) as f:
    f.seek(100 * LBA)
    f.write(blockdata)
    os.fsync(f.fileno())
c.status(slm_load(100, 4, 1 << 20), SUCCESS, "SLM Load 4 LBAs")
r = slm_read(1 << 20, 4 * LBA)
c.ok(r.data == blockdata, "SLM Load brought the namespace's bytes")
c.status(slm_store(200, 4, 1 << 20), SUCCESS, "SLM Store 4 LBAs")
fd = os.open("/dev/nvme0n1", os.O_RDONLY | os.O_DIRECT)
import mmap
buf = mmap.mmap(-1, 4 * LBA)
os.preadv(fd, [buf], 200 * LBA)
os.close(fd)
c.ok(bytes(buf) == blockdata, "SLM Store wrote the LBAs (read back with O_DIRECT)")
nsze = int(open("/sys/block/nvme0n1/size").read()) * 512 // LBA
c.status(slm_load(nsze - 1, 2, 0), LBA_OUT_OF_RANGE, "SLM Load past the namespace's end")
c.status(slm_store(nsze, 1, 0), LBA_OUT_OF_RANGE, "SLM Store past the namespace's end")
c.status(slm_load(0, 2, SLM - LBA), SLM_OUT_OF_BOUNDS, "SLM Load past SLM's end")

# --- Execute statuses
good = lambda: execute(0x01, [(0, 64), (4096, 64)])
c.status(good(), SUCCESS, "copy Execute")
c.status(execute(0x3F, [(0, 64)]), INVALID_PROGRAM, "unknown program id 3Fh")
c.status(execute(0x0100, [(0, 64)]), INVALID_PROGRAM, "empty downloadable slot 100h")
c.status(execute(0x01, [(0, 64), (64, 64)], magic=b"XXXX"), INVALID_DESCRIPTOR, "bad magic")
c.status(execute(0x01, [(0, 64), (64, 64)], version=2), INVALID_DESCRIPTOR, "bad version")
c.status(execute(0x01, [(0, 64), (64, 64)], flags=1), INVALID_DESCRIPTOR, "non-zero flags")
c.status(execute(0x01, [(0, 64)] * 17), INVALID_DESCRIPTOR, "more ranges than max_ranges")
d = descriptor(0x01, [(0, 64), (64, 64)]) + bytes(4)
c.status(passthru(EXECUTE, cdw={10: len(d)}, write=d), INVALID_DESCRIPTOR,
         "CDW10 longer than the descriptor it carries")
c.status(passthru(EXECUTE, cdw={10: 4100}, write=bytes(4100)), INVALID_FIELD, "CDW10 above max_desc_len")
c.status(passthru(EXECUTE, cdw={10: 0}, write=bytes(4)), INVALID_FIELD, "CDW10 of zero")
c.status(execute(0x01, [(SLM - 32, 64), (0, 64)]), SLM_OUT_OF_BOUNDS, "range past SLM's end")
c.status(execute(0x01, [((1 << 64) - 16, 32), (0, 64)]), SLM_OUT_OF_BOUNDS, "range wrapping 2^64")
c.status(execute(0x02, [(0, 64), (64, 64), (128, 64)], bytes(20)), INVALID_PARAMETERS,
         "gemm with 20 parameter bytes")
c.status(execute(0x01, [(0, 128), (4096, 64)]), OUTPUT_OVERFLOW, "copy into a shorter output")
c.status(execute(0x0A, [(0, 64), (4096, 64)], struct.pack("<I", 0)), PROGRAM_FAULT,
         "decompress of bytes that are no zstd frame")

# --- statistics
s = stats()
c.ok(s["magic"] == b"CSDS", "statistics magic CSDS")
c.ok(s["slm_write_cmds"] == 5 and s["slm_read_cmds"] == 4, f"SLM Write/Read counted ({s['slm_write_cmds']}, {s['slm_read_cmds']})")
c.ok(s["bytes_host_to_slm"] == 8196 and s["bytes_slm_to_host"] == 8192 + 4 * LBA,
     "host<->SLM bytes count only successful transfers")
c.ok(s["slm_load_cmds"] == 3 and s["slm_store_cmds"] == 2 and s["bytes_namespace_to_slm"] == 4 * LBA
     and s["bytes_slm_to_namespace"] == 4 * LBA, "SLM Load/Store commands and bytes")
c.ok(s["exec_cmds"] == 15 and s["exec_errors"] == 14, f"Execute commands {s['exec_cmds']}, errors {s['exec_errors']}")
c.ok(s["per_program"][1] == 2 and s["exec_busy_ns"] > 0, "per-program count and busy time")
c.report()
