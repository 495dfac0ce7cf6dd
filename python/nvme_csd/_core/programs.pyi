# SPDX-License-Identifier: MIT
"""
libcsd's typed calls of the device-defined programs
"""
from __future__ import annotations
import collections.abc
import nvme_csd._core
import typing
import typing_extensions
__all__: list[str] = ['btree_write', 'chase', 'chase_value', 'checksum', 'conv2d', 'convert', 'copy', 'decompress', 'downloaded', 'elementwise', 'embedding_bag', 'filter', 'gather', 'gemm', 'read_blocks_into', 'reduce', 'softmax', 'write_blocks']
def btree_write(dev: nvme_csd._core.Device, keys: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], values: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], base_lba: typing.SupportsInt | typing.SupportsIndex, fanout: typing.SupportsInt | typing.SupportsIndex, force: bool = False) -> tuple[int, int, int]:
    """
    the chase example's B+-tree written from base_lba: (root_lba, blocks, depth); unless force, refused (EEXIST) over a partition table, a filesystem, a store or blocks that are no tree's
    """
def chase(arg0: nvme_csd._core.Device, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing.SupportsInt | typing.SupportsIndex, arg3: typing.SupportsInt | typing.SupportsIndex, arg4: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], arg5: typing.SupportsInt | typing.SupportsIndex) -> tuple[int, int]:
    """
    a downloaded program's chase from start_lba (params[1..] = params): (value, hops)
    """
def chase_value(arg0: nvme_csd._core.Device, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing.SupportsInt | typing.SupportsIndex, arg3: typing.SupportsInt | typing.SupportsIndex, arg4: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], arg5: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    the same chase as one command: its value from the completion (no hop count read back)
    """
def checksum(arg0: nvme_csd._core.Device, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]) -> int:
    """
    checksum of a range (CRC-32C or XXH64)
    """
def conv2d(arg0: nvme_csd._core.Device, arg1: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg2: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg3: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex] | None, arg4: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg5: typing.Annotated[collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], "FixedSize(7)"], arg6: typing.Annotated[collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], "FixedSize(2)"], arg7: typing.Annotated[collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], "FixedSize(2)"], arg8: typing.Annotated[collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], "FixedSize(2)"]) -> None:
    """
    conv2d, NCHW f32: (n, c, h, w, k, r, s), (stride h, w), (padding h, w), (dilation h, w); bias None or a range
    """
def convert(arg0: nvme_csd._core.Device, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg3: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg4: typing.SupportsInt | typing.SupportsIndex, arg5: typing.SupportsFloat | typing.SupportsIndex, arg6: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    convert count elements; returns the bytes written
    """
def copy(arg0: nvme_csd._core.Device, arg1: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg2: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]) -> int:
    """
    copy: dst = src; returns the bytes copied
    """
def decompress(arg0: nvme_csd._core.Device, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg3: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]) -> int:
    """
    decompress; returns the decompressed bytes
    """
def downloaded(arg0: nvme_csd._core.Device, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing.SupportsInt | typing.SupportsIndex, arg3: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg4: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg5: typing.SupportsInt | typing.SupportsIndex, arg6: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> tuple[int, int]:
    """
    a downloaded program in a mode over count records (chase: records is the result range, count the hop limit, params[0] the start LBA): (dw0, dw1)
    """
@typing.overload
def elementwise(arg0: nvme_csd._core.Device, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg3: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg4: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg5: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    elementwise, binary: out = x op y over count f32
    """
@typing.overload
def elementwise(arg0: nvme_csd._core.Device, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg3: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg4: typing.SupportsInt | typing.SupportsIndex, arg5: typing.SupportsFloat | typing.SupportsIndex, arg6: typing.SupportsFloat | typing.SupportsIndex) -> None:
    """
    elementwise, unary: out = op(x) (axpb: a*x+b)
    """
def embedding_bag(arg0: nvme_csd._core.Device, arg1: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg2: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg3: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg4: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg5: typing.SupportsInt | typing.SupportsIndex, arg6: typing.SupportsInt | typing.SupportsIndex, arg7: typing.SupportsInt | typing.SupportsIndex, arg8: typing.SupportsInt | typing.SupportsIndex, arg9: typing.SupportsInt | typing.SupportsIndex, arg10: bool, arg11: typing.SupportsInt | typing.SupportsIndex, arg12: bool) -> None:
    """
    embedding_bag of a table on the namespace into out (weights: length 0 for none)
    """
def filter(arg0: nvme_csd._core.Device, arg1: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg2: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg3: typing.SupportsInt | typing.SupportsIndex, arg4: typing.SupportsInt | typing.SupportsIndex, arg5: typing.SupportsInt | typing.SupportsIndex, arg6: typing.SupportsInt | typing.SupportsIndex, arg7: typing.SupportsInt | typing.SupportsIndex, arg8: bool, arg9: typing.SupportsFloat | typing.SupportsIndex, arg10: typing.SupportsFloat | typing.SupportsIndex, arg11: typing.SupportsInt | typing.SupportsIndex, arg12: typing.SupportsInt | typing.SupportsIndex) -> tuple[int, int]:
    """
    filter into a fixed output range: (bytes written, matches); Output Overflow if it is small
    """
def gather(arg0: nvme_csd._core.Device, arg1: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg2: typing.SupportsInt | typing.SupportsIndex, arg3: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]) -> int:
    """
    gather: count (lba, offset, length) entries of the namespace into out; returns the bytes written
    """
def gemm(arg0: nvme_csd._core.Device, arg1: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg2: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg3: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg4: typing.SupportsInt | typing.SupportsIndex, arg5: typing.SupportsInt | typing.SupportsIndex, arg6: typing.SupportsInt | typing.SupportsIndex, arg7: bool, arg8: bool, arg9: typing.SupportsFloat | typing.SupportsIndex, arg10: typing.SupportsFloat | typing.SupportsIndex) -> None:
    """
    gemm: C = alpha op(A) op(B) + beta C, f32 row-major, m x n
    """
def read_blocks_into(arg0: nvme_csd._core.Device, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing_extensions.Buffer) -> None:
    """
    reads whole blocks of the namespace from slba into a buffer (NVMe Read)
    """
def reduce(arg0: nvme_csd._core.Device, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing.SupportsInt | typing.SupportsIndex, arg3: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg4: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg5: typing.SupportsInt | typing.SupportsIndex, arg6: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    reduce: one 8-byte result per row into out
    """
def softmax(arg0: nvme_csd._core.Device, arg1: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg2: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex], arg3: typing.SupportsInt | typing.SupportsIndex, arg4: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    softmax of each row
    """
def write_blocks(arg0: nvme_csd._core.Device, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing_extensions.Buffer) -> None:
    """
    writes whole blocks of the namespace from slba (NVMe Write): where media programs' tables live; refused (EEXIST) over an object store's blocks
    """
