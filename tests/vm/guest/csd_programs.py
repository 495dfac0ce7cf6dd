# SPDX-License-Identifier: MIT
"""Guest test: the ten programs over passthrough, checked against numpy references."""
import struct

import numpy as np

from csd_guest import *

c = Checks()
rng = np.random.default_rng(7)
MiB = 1 << 20


def put(off, arr):
    data = np.ascontiguousarray(arr).tobytes()
    r = slm_write(off, data + bytes(-len(data) % 4))   # SLM Write moves multiples of 4
    assert r.status == 0, hex(r.status)


def get(off, n, dtype):
    r = slm_read(off, n * np.dtype(dtype).itemsize)
    assert r.status == 0, hex(r.status)
    return np.frombuffer(r.data, dtype=dtype)


# copy
x = rng.integers(0, 255, 4096, dtype=np.uint8)
put(0, x)
r = execute(0x01, [(0, 4096), (MiB, 4096)])
c.status(r, SUCCESS, "copy")
c.ok(r.dw0 == 4096 and np.array_equal(get(MiB, 4096, np.uint8), x), "copy: bytes and DW0")

# gemm with transposes, alpha and beta
m, n, k = 37, 29, 41
A = rng.standard_normal((k, m), dtype=np.float32)     # stored k x m, transposed
B = rng.standard_normal((k, n), dtype=np.float32)
C = rng.standard_normal((m, n), dtype=np.float32)
put(0, A); put(MiB, B); put(2 * MiB, C)
r = execute(0x02, [(0, A.nbytes), (MiB, B.nbytes), (2 * MiB, C.nbytes)],
            struct.pack("<4I2f", m, n, k, 1, 0.5, 2.0))
c.status(r, SUCCESS, "gemm")
want = 0.5 * (A.T.astype(np.float64) @ B) + 2.0 * C
c.ok(r.dw0 == m * n * 4 and np.allclose(get(2 * MiB, m * n, np.float32).reshape(m, n), want, atol=1e-4),
     "gemm: C = 0.5 A^T B + 2 C")

# elementwise: binary add, unary gelu in place
xs = rng.standard_normal(1000).astype(np.float32)
ys = rng.standard_normal(1000).astype(np.float32)
put(0, xs); put(MiB, ys)
r = execute(0x03, [(0, 4000), (MiB, 4000), (2 * MiB, 4000)], struct.pack("<2I2f", 0, 1000, 0, 0))
c.status(r, SUCCESS, "elementwise add")
c.ok(np.allclose(get(2 * MiB, 1000, np.float32), xs + ys), "elementwise add: values")
r = execute(0x03, [(0, 4000), (0, 4000)], struct.pack("<2I2f", 19, 1000, 0, 0))
c.status(r, SUCCESS, "elementwise gelu in place")
from math import erf, sqrt
gelu = np.array([0.5 * v * (1 + erf(v / sqrt(2))) for v in xs.astype(np.float64)])
c.ok(np.allclose(get(0, 1000, np.float32), gelu, atol=1e-6), "elementwise gelu: values")

# softmax
S = (rng.standard_normal((8, 50)) * 10).astype(np.float32)
put(0, S)
r = execute(0x04, [(0, S.nbytes), (MiB, S.nbytes)], struct.pack("<2I", 8, 50))
c.status(r, SUCCESS, "softmax")
e = np.exp(S.astype(np.float64) - S.max(axis=1, keepdims=True))
c.ok(np.allclose(get(MiB, 400, np.float32).reshape(8, 50), e / e.sum(axis=1, keepdims=True), atol=1e-6),
     "softmax: rows sum to one, values")

# reduce: sum f32 -> f64 per row, argmax i32
R = rng.standard_normal((4, 1000)).astype(np.float32)
put(0, R)
r = execute(0x05, [(0, R.nbytes), (MiB, 32)], struct.pack("<4I", 0, 0, 4, 1000))
c.status(r, SUCCESS, "reduce sum")
c.ok(np.allclose(get(MiB, 4, np.float64), R.astype(np.float64).sum(axis=1)), "reduce sum: values")
I = rng.integers(-1000, 1000, (3, 77), dtype=np.int32)
put(0, I)
r = execute(0x05, [(0, I.nbytes), (MiB, 24)], struct.pack("<4I", 4, 2, 3, 77))
c.ok(r.status == 0 and np.array_equal(get(MiB, 3, np.uint64), I.argmax(axis=1)), "reduce argmax i32")

# filter: records of (u32 id, f32 value, 8 bytes pad); value > 0.5, indices and records
rec = np.zeros(5000, dtype=[("id", "<u4"), ("value", "<f4"), ("pad", "<u8")])
rec["id"] = np.arange(5000)
rec["value"] = rng.random(5000, dtype=np.float32)
put(0, rec)
hits = np.nonzero(rec["value"] > 0.5)[0]
p = struct.pack("<3IHHII", 16, 5000, 4, 4, 4, 1, 0) + struct.pack("<dd", 0.5, 0.0)
r = execute(0x06, [(0, rec.nbytes), (MiB, 5000 * 4)], p)
c.status(r, SUCCESS, "filter indices")
c.ok(r.dw1 == len(hits) and r.dw0 == 4 * len(hits), "filter: DW1 = matching records, DW0 = bytes")
c.ok(np.array_equal(get(MiB, len(hits), np.uint32), hits), "filter: the indices")
p = struct.pack("<3IHHII", 16, 5000, 4, 4, 4, 0, 0) + struct.pack("<dd", 0.5, 0.0)
r = execute(0x06, [(0, rec.nbytes), (MiB, 16 * 10)], p)
c.status(r, OUTPUT_OVERFLOW, "filter records into a small output")
c.ok(r.dw1 == len(hits), "filter overflow: DW1 still counts matches")
r = execute(0x06, [(0, rec.nbytes), (MiB, 16 * 5000)], p)
c.ok(r.status == 0 and get(MiB, 16 * len(hits), np.uint8).tobytes() == rec[hits].tobytes(), "filter records")

# convert f32 -> f16 and back, f32 -> int8
F = (rng.standard_normal(2048) * 100).astype(np.float32)
put(0, F)
r = execute(0x07, [(0, F.nbytes), (MiB, 4096)], struct.pack("<2IfI", 0, 2048, 0, 0))
c.status(r, SUCCESS, "convert f32->f16")
c.ok(np.array_equal(get(MiB, 2048, np.float16), F.astype(np.float16)), "convert f32->f16 matches numpy (RNE)")
r = execute(0x07, [(0, F.nbytes), (MiB, 2048)], struct.pack("<2Ifi", 5, 2048, 2.0, 3))
q = np.clip(np.rint(F.astype(np.float64) / 2.0) + 3, -128, 127).astype(np.int8)
c.ok(r.status == 0 and np.array_equal(get(MiB, 2048, np.int8), q), "convert f32->i8 (half to even, clamp)")

# checksum: CRC-32C check value, XXH64 in DW0/DW1
slm_write(0, b"123456789xyz")
r = execute(0x08, [(0, 9)], struct.pack("<I", 0))
c.ok(r.status == 0 and r.dw0 == 0xE3069283 and r.dw1 == 0, "checksum crc32c check value")
slm_write(0, b"Nobody inspects the spammish repetition\0")
r = execute(0x08, [(0, 39)], struct.pack("<I", 1))
c.ok(r.status == 0 and (r.dw1 << 32 | r.dw0) == 0xfbcea83c8a378bf1, "checksum xxh64 across DW0/DW1")

# conv2d 1x2x6x6, 3 filters 3x3, pad 1, bias
X = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
W = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
bias = rng.standard_normal(3).astype(np.float32)
put(0, X); put(MiB, W); put(2 * MiB, bias)
r = execute(0x09, [(0, X.nbytes), (MiB, W.nbytes), (2 * MiB, 12), (3 * MiB, 3 * 36 * 4)],
            struct.pack("<14I", 1, 2, 6, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1))
c.status(r, SUCCESS, "conv2d")
Xp = np.pad(X.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
Y = np.zeros((3, 6, 6))
for kk in range(3):
    for i in range(6):
        for j in range(6):
            Y[kk, i, j] = (Xp[0, :, i:i + 3, j:j + 3] * W[kk]).sum() + bias[kk]
c.ok(np.allclose(get(3 * MiB, 108, np.float32).reshape(3, 6, 6), Y, atol=1e-4), "conv2d: values")

# decompress: frames made by Debian's zstd and lz4 tools in the guest
import subprocess
text = b"nvme-csd computational storage " * 300 + bytes(range(256))
for algo, tool in ((0, "zstd"), (1, "lz4")):
    frame = subprocess.run([tool, "-c", "-q"], input=text, stdout=subprocess.PIPE, check=True).stdout
    put(0, np.frombuffer(frame, np.uint8))
    r = execute(0x0A, [(0, len(frame)), (MiB, 65536)], struct.pack("<I", algo))
    c.ok(r.status == 0 and r.dw0 == len(text) and get(MiB, len(text), np.uint8).tobytes() == text,
         f"decompress {tool} frame")
zframe = frame = subprocess.run(["zstd", "-c", "-q"], input=text, stdout=subprocess.PIPE, check=True).stdout
put(0, np.frombuffer(zframe, np.uint8))
r = execute(0x0A, [(0, len(zframe) - 3), (MiB, 65536)], struct.pack("<I", 0))
c.status(r, PROGRAM_FAULT, "decompress truncated zstd frame")
r = execute(0x0A, [(0, len(zframe)), (MiB, 100)], struct.pack("<I", 0))
c.status(r, OUTPUT_OVERFLOW, "decompress into a small output")

st = stats()
c.ok(st["per_program"][1] >= 1 and st["per_program"][10] >= 3 and st["exec_errors"] >= 3,
     "statistics count programs and errors")
c.report()
