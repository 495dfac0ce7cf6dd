#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes seed inputs for a fuzz target: make_seeds.py TARGET DIR.
fuzz_execute: one valid input per program (descriptor + SLM bytes);
fuzz_program: each eBPF object the build made (examples and refused ones) + records
(btree_lookup.o also over a B+-tree, for its chase);
fuzz_elf: the same objects, each as the section-by-section description fuzz_elf.cc reads
(elf_description below);
fuzz_catalog: catalogs of both formats and a journal, encoded here independently;
fuzz_npy: dtype texts and .npy files as numpy writes them (headers written here);
fuzz_nvme_cs: command streams for the standard front end's decoders (range sets,
activation, Execute Program, Memory Fill/Read/Write, Memory Copy, NVM Copy from memory),
encoded here independently;
qemu-generic: QEMU generic-fuzz inputs that enable the controller, create an I/O queue
pair and submit each CSD command (MMIO writes + DMA patterns that become the queue
entries and data the controller reads)."""
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


if target == "fuzz_nvme_cs":  # kind byte, then dwords and data (tests/fuzz/fuzz_nvme_cs.cc)
    def rng(sb, ln, nsid=2):
        return struct.pack("<IIQ16x", nsid, ln, sb)
    create = bytes([0]) + struct.pack("<II", 1, 0xFFFFFFFF) + rng(0, 4096) + rng(65536, 4096)
    execute_inline = bytes([3]) + struct.pack("<III", 1, 2, 64) + rng(0, 64) + rng(4096, 64)
    execute_set = bytes([3]) + struct.pack("<III", 0x80000001, 2, 0)
    seeds = {
        "create-execute-delete": create + execute_set + bytes([1]) + struct.pack("<I", 0x10000),
        "execute-inline": execute_inline,
        "deactivate-execute": bytes([2]) + struct.pack("<I", 0x10001) + execute_inline,
        "fill": bytes([4]) + struct.pack("<III", 8, 40, 0xA1B2C3D4),
        "memory-copy": bytes([8]) + struct.pack("<IIIII", 1, 2, 4096, 1, 64) +
                       2 * struct.pack("<I4xQH14x", 1, 0, 3) + struct.pack("<I", 0xFFFFFFFF),
        "nvm-copy-from-memory": bytes([9]) + struct.pack("<IIIII", 0, 4, 8, 1, 32) + rng(0, 1024) +
                                struct.pack("<I", 0xFFFFFFFF),
        "read-write": bytes([5]) + struct.pack("<IIII", 1, 4096, 0, 8192) + bytes([5]) + struct.pack("<IIII", 0, 0, 0, 64),
    }
    for name, blob in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(blob)
    sys.exit(0)

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

if target == "fuzz_npy":  # mode byte 0: dtype text, 1: a .npy file
    def npy(descr, shape, nbytes, version=1):
        h = ("{'descr': %s, 'fortran_order': False, 'shape': %s, }" % (descr, shape)).encode()
        prefix = 10 if version == 1 else 12
        h += b" " * ((-(prefix + len(h) + 1)) % 64) + b"\n"
        size = struct.pack("<H" if version == 1 else "<I", len(h))
        return b"\x93NUMPY" + bytes([version, 0]) + size + h + bytes(range(256)) * (nbytes // 256) + bytes(nbytes % 256)
    texts = {"plain": "<f4", "sales": "[('id', '<u4'), ('value', '<f4'), ('region', '<u4'), ('amount', '<f4')]",
             "nested": "[('a', '|u1'), ('', '|V3'), ('b', [('x', '>f8'), ('y', '<U2', (3,))]), (('T', 't'), '<M8[ns]')]",
             "names": "[(\"it's\", '<i4'), ('\\u00e9\\n', '>c16', (2, 2))]"}
    seeds = {f"text-{k}": b"\x00" + v.encode() for k, v in texts.items()}
    seeds["npy-plain"] = b"\x01" + npy("'<f4'", "(3, 2)", 24)
    seeds["npy-sales"] = b"\x01" + npy(texts["sales"], "(4,)", 64)
    seeds["npy-nested"] = b"\x01" + npy(texts["nested"], "(2,)", 2 * 44, version=2)
    seeds["npy-names"] = b"\x01" + npy(texts["names"].replace("\\u00e9", "\u00e9"), "()", 68, version=3)
    for name, blob in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(blob)
    sys.exit(0)

if target == "qemu-generic":
    SEP = b"FUZZ"
    ASQ, ACQ, IOSQ, IOCQ, DATA = 0x1000000, 0x1100000, 0x1200000, 0x1300000, 0x1400000

    def mmio(off, value, size=2):  # OP_WRITE: size (0 b, 1 w, 2 l, 3 q), region 0 (the registers)
        return bytes([3]) + struct.pack("<BBxxIQ", size, 0, off, value)

    def pattern(data):  # OP_ADD_DMA_PATTERN: index 0, stride 0, the bytes a DMA read finds
        return bytes([7]) + struct.pack("<BB", 0, 0) + data

    def sqe(opc, nsid=0, prp1=0, prp2=0, cdw=(0, 0, 0, 0, 0, 0)):
        return struct.pack("<BBHIQQQQ6I", opc, 0, 1, nsid, 0, 0, prp1, prp2, *cdw)

    def desc(program, ranges, params):
        d = struct.pack("<4sHHHHI", b"CSDX", 1, program, len(ranges), 0, len(params))
        return d + b"".join(struct.pack("<QQ", o, n) for o, n in ranges) + params

    def qemu_seed(name, io_cmds):
        """io_cmds: (command, data the controller will read for it or None) in order."""
        ops = [mmio(0x24, 31 << 16 | 31), mmio(0x28, ASQ, 3), mmio(0x30, ACQ, 3), mmio(0x14, 0x00460001)]
        ops.append(pattern(sqe(0x05, prp1=IOCQ, cdw=(31 << 16 | 1, 1, 0, 0, 0, 0))))  # Create I/O CQ 1
        ops.append(pattern(sqe(0x01, prp1=IOSQ, cdw=(31 << 16 | 1, 1 << 16 | 1, 0, 0, 0, 0))))  # I/O SQ 1
        for cmd, data in io_cmds:
            ops.append(pattern(cmd))
            for at in range(0, len(data or b""), 4096):  # one DMA read per page of its PRPs
                ops.append(pattern(data[at:at + 4096]))
        ops += [mmio(0x1000, 2), bytes([9]), mmio(0x1008, len(io_cmds)), bytes([9])]
        with open(os.path.join(out, name), "wb") as f:
            f.write(SEP.join(ops))

    page = bytes(range(256)) * 16
    cks = desc(8, [(0, 4096)], struct.pack("<I", 1))
    gemm = desc(2, [(0, 64), (64, 64), (128, 64)], struct.pack("<4I2f", 4, 4, 4, 3, 1.0, 0.5))
    qemu_seed("slm-write-read", [(sqe(0x81, 1, DATA, 0, (0, 0, 4096, 0, 0, 0)), page),
                                 (sqe(0x82, 1, DATA, 0, (0, 0, 4096, 0, 0, 0)), None)])
    qemu_seed("slm-load-store", [(sqe(0x80, 1, 0, 0, (8, 0, 7, 0, 0, 0)), None),
                                 (sqe(0x84, 1, 0, 0, (64, 0, 7, 4096, 0, 0)), None)])
    qemu_seed("execute-checksum", [(sqe(0x81, 1, DATA, 0, (0, 0, 4096, 0, 0, 0)), page),
                                   (sqe(0x85, 1, DATA + 4096, 0, (len(cks), 0, 0, 0, 0, 0)), cks)])
    qemu_seed("execute-gemm", [(sqe(0x85, 1, DATA, 0, (len(gemm), 0, 0, 0, 0, 0)), gemm)])
    # the standard front end (csd.nvme-cs=on: memory NSID 2, compute NSID 3): Memory Write /
    # Read, Memory Fill, Execute Program (copy) with inline ranges, CDW15 = data length
    cs_ranges = struct.pack("<IIQ16x", 2, 64, 0) + struct.pack("<IIQ16x", 2, 64, 8192)
    qemu_seed("nvme-cs-memory", [(sqe(0x05, 2, DATA, 0, (0, 0, 4096, 0, 0, 0)), page),
                                 (sqe(0x04, 2, 0, 0, (4096, 0, 64, 0x01020304, 0, 0)), None),
                                 (sqe(0x02, 2, DATA, 0, (0, 0, 4096, 0, 0, 0)), None)])
    qemu_seed("nvme-cs-execute", [(struct.pack("<BBHIIIQQQ6I", 0x01, 0, 1, 3, 1, 2, 0, DATA, 0,
                                               0, 0, 0, 0, 0, len(cs_ranges)), cs_ranges)])
    # Memory Copy (format 2h, two ranges of 8 LBAs) into memory, then Copy format 4h of it
    # back to other LBAs (the glue's chain of block I/O parts), and a Memory Copy past the end
    copy_src = 2 * struct.pack("<I4xQH14x", 1, 8, 7)
    qemu_seed("nvme-cs-copies", [(sqe(0x01, 2, DATA, 0, (0, 0, 1 | 2 << 8, 0, 0, 0)), copy_src),
                                 (sqe(0x19, 1, DATA + 4096, 0, (64, 0, 4 << 8, 0, 0, 0)),
                                  struct.pack("<IIQ16x", 2, 8192, 0)),
                                 (sqe(0x01, 2, DATA + 8192, 0, (0, 0, 2 << 8, 0, 0, 0)),
                                  struct.pack("<I4xQH14x", 1, 0xFFFFFFF0, 7))])
    qemu_seed("compare-write", [(sqe(0x8D, 1, DATA, DATA + 4096, (16, 0, 7, 0, 0, 0)), page * 2),
                                (sqe(0x8D, 1, DATA, DATA + 4096, (16, 0, 7, 0, 0, 0)), page * 2)])
    elf = open(glob.glob(os.path.join(top, "build/meson/examples/bpf/threshold.o"))[0], "rb").read() \
        if glob.glob(os.path.join(top, "build/meson/examples/bpf/threshold.o")) else b"\x7fELF" + bytes(60)
    qemu_seed("program-load", [(sqe(0x89, 1, DATA, DATA + 4096, (1 << 16, len(elf), 0, min(len(elf), 8192), 16, 0)),
                                elf[:8192]),
                               (sqe(0x8C, 1, 0, 0, (0x100, 0, 0, 0, 0, 0)), None)])
    qemu_seed("logs", [])
    sys.exit(0)

def elf_description(img, record_size, records):
    """An ELF object as tests/fuzz/fuzz_elf.cc describes one: u16 record size - 1; u8 OS ABI,
    u16 type, u16 machine, i32 shstrndx (-1: computed), i32 shnum (-1), u16 names table
    index; u8 section count; per section (from 1): u8 name length, name, u32 type, u64
    flags, u32 link, u32 info, u64 entsize, i64 name offset, i64 file offset, i64 size
    (-1: computed), u16 data length, data; then the records."""
    (shoff,) = struct.unpack_from("<Q", img, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", img, 0x3C)
    sh = [struct.unpack_from("<IIQQQQIIQQ", img, shoff + 64 * i) for i in range(shnum)]
    names = sh[shstrndx]

    def name(off):
        start = names[4] + off
        return img[start:img.index(b"\0", start)]
    out = struct.pack("<HBHHiiHB", record_size - 1, img[7], *struct.unpack_from("<HH", img, 16), -1, -1, shstrndx,
                      shnum - 1)
    for (nm, typ, flags, _addr, off, size, link, info, _align, entsize) in sh[1:]:
        data = b"" if typ == 8 else img[off:off + size]  # SHT_NOBITS has none
        n = name(nm)
        out += struct.pack("<B", len(n)) + n + struct.pack("<IQIIQqqqH", typ, flags, link, info, entsize, -1, -1,
                                                           size if typ == 8 else -1, len(data)) + data
    return out + records


if target == "fuzz_elf":
    objs = glob.glob(os.path.join(top, "build/meson/examples/bpf/*.o")) + \
        glob.glob(os.path.join(top, "build/meson/tests/unit/*.o"))
    for path in objs:
        with open(path, "rb") as f:
            img = f.read()
        if len(img) > 0xFFFF:  # a section's length field is 16 bits (long_program.o's code is 384 KiB)
            continue
        with open(os.path.join(out, os.path.basename(path)), "wb") as f:
            f.write(elf_description(img, 16, bytes(range(64))))
    sys.exit(0)

if target == "fuzz_program":
    objs = glob.glob(os.path.join(top, "build/meson/examples/bpf/*.o")) + \
        glob.glob(os.path.join(top, "build/meson/tests/unit/*.o"))
    records = bytes(range(256)) * 4
    for path in objs:
        with open(path, "rb") as f:
            img = f.read()
        if len(img) > 0xFFFF:  # the input's length field is 16 bits (long_program.o is 384 KiB)
            continue
        for rs in (16, 128):
            name = f"{os.path.basename(path)}-{rs}"
            with open(os.path.join(out, name), "wb") as f:
                f.write(struct.pack("<HH", rs - 1, len(img)) + img + records)
        if os.path.basename(path) == "btree_lookup.o":
            # its chase over a B+-tree: 64 records of 512 bytes are the namespace's blocks
            # (block b = record b % 64); the chase starts at the LBA record 0's first 8 bytes
            # give (mod 4098): the root (kind 1, 2 children: leaves at 10 and 11) is there.
            def node(kind, keys, vals):
                return struct.pack("<II", kind, len(keys)) + struct.pack("<31Q", *(keys + [0] * (31 - len(keys)))) + \
                    struct.pack("<31Q", *(vals + [0] * (31 - len(vals))))
            blocks = [bytes(512)] * 64
            root = node(1, [0, 100], [10, 11]).ljust(512, b"\0")
            blocks[0] = root
            blocks[struct.unpack_from("<Q", root)[0] % 4098 % 64] = root
            blocks[10] = node(2, [1, 2, 3], [10, 20, 30]).ljust(512, b"\0")
            blocks[11] = node(2, [100, 200], [1000, 2000]).ljust(512, b"\0")
            with open(os.path.join(out, "btree_lookup.o-chase"), "wb") as f:
                f.write(struct.pack("<HH", 511, len(img)) + img + b"".join(blocks))
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
gather_entries = struct.pack("<QII", 5, 100, 600) + struct.pack("<QII", 6, 0, 8) + struct.pack("<QII", 65535, 500, 12)
seed("gather", 11, [(0, len(gather_entries)), (4096, 1024)], struct.pack("<2I", 3, 0), gather_entries)
bag_slm = struct.pack("<4q", 3, 0, 9, 3) + struct.pack("<2q", 0, 2)
seed("embedding-bag", 12, [(0, 32), (32, 16), (0, 0), (4096, 256)],
     struct.pack("<2Q6I", 100, 10, 8, 0, 0, 0, 2, 0), bag_slm)
