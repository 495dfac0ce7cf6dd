#!/usr/bin/env python3
"""Writes seed inputs for a fuzz target: make_seeds.py TARGET DIR.
fuzz_execute: one valid input per program (descriptor + SLM bytes);
fuzz_program: each eBPF object the build made (examples and refused ones) + records;
fuzz_catalog: catalogs of both formats and a journal, encoded here independently."""
import glob
import os
import struct
import sys

target, out = sys.argv[1], sys.argv[2]
top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

def cat_str(s):
    return struct.pack("<H", len(s)) + s


def cat_object(name, dtype, shape, nbytes=4096, block=3, crc=0x1234, gen=2):
    return (cat_str(name) + cat_str(dtype) + struct.pack("<I", len(shape)) +
            b"".join(struct.pack("<Q", d) for d in shape) + struct.pack("<QQIQ", nbytes, block, crc, gen))


def cat_reservation(rid, block, blocks, owner=b"host:42"):
    return struct.pack("<QQQQ", rid, block, blocks, 1700000000) + cat_str(owner)


if target == "fuzz_catalog":  # mode byte 0: format 1, 1: format 2, 2: journal
    objs = [cat_object(b"blob", b"", []), cat_object(b"t", b"<f4", [10, 100]), cat_object(b"x" * 255, b"d" * 255, [1] * 32)]
    v1 = struct.pack("<I", len(objs)) + b"".join(objs)
    v2 = v1 + struct.pack("<I", 2) + cat_reservation(7, 10, 2) + cat_reservation(9, 20, 1)
    journal = (b"\x01" + cat_object(b"new", b"<i8", [3]) + struct.pack("<Q", 1) + b"\x02" + cat_str(b"base") +
               b"\x03" + cat_reservation(5, 30, 4) + b"\x04" + struct.pack("<Q", 5))
    for name, data in (("v1", b"\x00" + v1), ("v2", b"\x01" + v2), ("empty", b"\x01" + bytes(8)), ("journal", b"\x02" + journal)):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    sys.exit(0)

if target == "fuzz_program":
    objs = glob.glob(os.path.join(top, "build/meson/examples/bpf/*.o")) + \
        glob.glob(os.path.join(top, "build/meson/tests/unit/*.o"))
    records = bytes(range(256)) * 4
    for path in objs:
        with open(path, "rb") as f:
            img = f.read()
        for rs in (16, 128):
            name = f"{os.path.basename(path)}-{rs}"
            with open(os.path.join(out, name), "wb") as f:
                f.write(struct.pack("<HH", rs - 1, len(img)) + img + records)
    sys.exit(0)


def seed(name, program, ranges, params, slm=b""):
    d = struct.pack("<4sHHHHI", b"CSDX", 1, program, len(ranges), 0, len(params))
    for off, ln in ranges:
        d += struct.pack("<QQ", off, ln)
    d += params
    with open(os.path.join(out, name), "wb") as f:
        f.write(struct.pack("<H", len(d)) + d + slm)


data = bytes(range(256)) * 64
seed("copy", 1, [(0, 64), (4096, 64)], b"", data)
seed("gemm", 2, [(0, 64), (64, 64), (128, 64)], struct.pack("<4I2f", 4, 4, 4, 3, 1.0, 0.5), data)
seed("ew-add", 3, [(0, 64), (64, 64), (128, 64)], struct.pack("<2I2f", 0, 16, 0, 0), data)
seed("ew-gelu", 3, [(0, 64), (0, 64)], struct.pack("<2I2f", 19, 16, 0, 0), data)
seed("softmax", 4, [(0, 64), (64, 64)], struct.pack("<2I", 4, 4), data)
seed("reduce", 5, [(0, 64), (64, 16)], struct.pack("<4I", 4, 0, 2, 8), data)
seed("filter", 6, [(0, 256), (4096, 256)], struct.pack("<3IHHII", 16, 16, 4, 4, 4, 0, 0) + struct.pack("<dd", 0.5, 1.0), data)
seed("convert", 7, [(0, 64), (64, 32)], struct.pack("<2IfI", 0, 16, 1.0, 0), data)
seed("checksum", 8, [(0, 100)], struct.pack("<I", 1), data)
seed("conv2d", 9, [(0, 64), (64, 36), (0, 0), (256, 16)], struct.pack("<14I", 1, 1, 4, 4, 1, 3, 3, 1, 1, 0, 0, 1, 1, 0), data)
zstd_frame = bytes.fromhex("28b52ffd2000410000616161")  # a tiny zstd frame
seed("decompress", 10, [(0, len(zstd_frame)), (64, 64)], struct.pack("<I", 0), zstd_frame)
