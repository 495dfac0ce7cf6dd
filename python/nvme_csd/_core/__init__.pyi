# SPDX-License-Identifier: MIT
"""
libcsd bindings (use the nvme_csd package, not this module)
"""
from __future__ import annotations
import collections.abc
import typing
import typing_extensions
from . import programs
__all__: list[str] = ['Device', 'DriveSet', 'GpuLayerLoader', 'SlmBuffer', 'SlmView', 'WIRE', 'canonical_dtype', 'gpu_available', 'gpu_configure', 'gpu_object_to_gpu', 'gpu_slm_to_gpu', 'has_gpu_part', 'npy_header_bytes', 'npy_header_size', 'npy_parse_header', 'programs', 'status_name']
class SlmView:
    """
    a zero-copy view of SLM bytes; it keeps the device's memory while it lives
    """
class SlmBuffer:
    def free(self) -> None:
        ...
    @property
    def freed(self) -> bool:
        ...
    @property
    def offset(self) -> int:
        ...
    @property
    def size(self) -> int:
        ...
class Device:
    def __init__(self, path: str, uring: bool = False, queue_depth: typing.SupportsInt | typing.SupportsIndex = 64, front_end: str = 'auto', read_only: bool = False) -> None:
        ...
    def bus(self) -> tuple[int, int, int]:
        ...
    def capabilities(self) -> dict:
        ...
    def close(self) -> None:
        ...
    def execute(self, arg0: typing.SupportsInt | typing.SupportsIndex, arg1: collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]], arg2: bytes) -> tuple[int, int]:
        ...
    def namespace(self) -> dict:
        ...
    def program_load(self, arg0: bytes, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing.SupportsInt | typing.SupportsIndex) -> int:
        ...
    def program_unload(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def slm_alloc(self, size: typing.SupportsInt | typing.SupportsIndex, align: typing.SupportsInt | typing.SupportsIndex = 4096) -> SlmBuffer:
        ...
    def slm_host_view(self, arg0: typing.SupportsInt | typing.SupportsIndex, arg1: typing.SupportsInt | typing.SupportsIndex) -> typing.Any:
        ...
    def slm_load(self, arg0: typing.SupportsInt | typing.SupportsIndex, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def slm_read_into(self, arg0: typing.SupportsInt | typing.SupportsIndex, arg1: typing_extensions.Buffer) -> None:
        ...
    def slm_store(self, arg0: typing.SupportsInt | typing.SupportsIndex, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def slm_write(self, arg0: typing.SupportsInt | typing.SupportsIndex, arg1: typing_extensions.Buffer) -> None:
        ...
    def statistics(self) -> dict:
        ...
    def store_checksum(self, name: str, algo: typing.SupportsInt | typing.SupportsIndex, slm_budget: typing.SupportsInt | typing.SupportsIndex = 0, progress: typing.Any = None) -> int:
        ...
    def store_convert(self, src: str, op: typing.SupportsInt | typing.SupportsIndex, dst: str, scale: typing.SupportsFloat | typing.SupportsIndex = 1.0, zero_point: typing.SupportsInt | typing.SupportsIndex = 0, slm_budget: typing.SupportsInt | typing.SupportsIndex = 0, progress: typing.Any = None) -> int:
        ...
    def store_decompress(self, src: str, codec: typing.SupportsInt | typing.SupportsIndex, dst: str, slm_budget: typing.SupportsInt | typing.SupportsIndex = 0, progress: typing.Any = None) -> int:
        ...
    def store_exists(self, arg0: str) -> bool:
        ...
    def store_filter(self, src: str, dst: str, record_size: typing.SupportsInt | typing.SupportsIndex, field_offset: typing.SupportsInt | typing.SupportsIndex, field_type: typing.SupportsInt | typing.SupportsIndex, op: typing.SupportsInt | typing.SupportsIndex, lo: typing.SupportsFloat | typing.SupportsIndex, hi: typing.SupportsFloat | typing.SupportsIndex, lo_int: typing.SupportsInt | typing.SupportsIndex, hi_int: typing.SupportsInt | typing.SupportsIndex, indices: bool, slm_budget: typing.SupportsInt | typing.SupportsIndex = 0, progress: typing.Any = None) -> tuple[int, int]:
        ...
    def store_format(self, force: bool = False) -> None:
        ...
    def store_gemm(self, a: str, b: str, c: str, slm_budget: typing.SupportsInt | typing.SupportsIndex = 0, progress: typing.Any = None) -> None:
        ...
    def store_generation(self) -> int:
        ...
    def store_get_fd(self, name: str, fd: typing.SupportsInt | typing.SupportsIndex, npy_header: bool, progress: typing.Any = None) -> dict:
        """
        streams a whole object to a file descriptor, checked (a .npy header first with npy_header)
        """
    def store_get_into(self, name: str, out: typing_extensions.Buffer, progress: typing.Any = None) -> int:
        """
        reads a whole object into out, checked; progress(done, total) as its bytes land
        """
    def store_get_writer(self, name: str, write: typing.Any, progress: typing.Any = None) -> dict:
        """
        streams a whole object through write(pos, memoryview), checked at its end
        """
    def store_list(self) -> list:
        ...
    def store_load(self, arg0: str) -> SlmBuffer:
        ...
    def store_put(self, name: str, data: typing_extensions.Buffer, dtype: str, shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], progress: typing.Any = None) -> None:
        """
        stores an object; progress(done, total) is called as its bytes are written
        """
    def store_put_fd(self, name: str, fd: typing.SupportsInt | typing.SupportsIndex, size: typing.SupportsInt | typing.SupportsIndex, dtype: str, shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], progress: typing.Any = None) -> None:
        """
        streams an object from a file descriptor (size < 0: a regular file's rest, else until its end)
        """
    def store_put_mapped(self, name: str, data: typing_extensions.Buffer, dtype: str, shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], progress: typing.Any = None) -> None:
        """
        streams an object from a memory map, paging out what it has read
        """
    def store_put_reader(self, name: str, read: typing.Any, size: typing.SupportsInt | typing.SupportsIndex, dtype: str, shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], progress: typing.Any = None) -> None:
        """
        streams an object from read(n) -> bytes-like (size < 0: until empty)
        """
    def store_read_into(self, arg0: str, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing_extensions.Buffer) -> None:
        ...
    def store_reclaim(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> int:
        ...
    def store_reduce(self, name: str, op: typing.SupportsInt | typing.SupportsIndex, slm_budget: typing.SupportsInt | typing.SupportsIndex = 0, progress: typing.Any = None, whole: bool = False) -> bytes:
        """
        the reduce program's 8-byte results, one a row, as bytes
        """
    def store_remove(self, arg0: str) -> None:
        ...
    def store_reservations(self) -> list:
        ...
    def store_run_program(self, slot: typing.SupportsInt | typing.SupportsIndex, record_size: typing.SupportsInt | typing.SupportsIndex, mode: typing.SupportsInt | typing.SupportsIndex, src: str, dst: str, params: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], slm_budget: typing.SupportsInt | typing.SupportsIndex = 0, progress: typing.Any = None) -> tuple[int, int]:
        """
        a downloaded program over an object's records: (matches or records, bytes or sum)
        """
    def store_stat(self, arg0: str) -> dict:
        ...
    @property
    def closed(self) -> bool:
        ...
    @property
    def front_end(self) -> str:
        ...
    @property
    def model_clock_ns(self) -> int:
        """
        the timing model's clock in ns: the in-process device's virtual clock with exact=on
        """
    @property
    def read_only(self) -> bool:
        ...
    @property
    def speaks(self) -> str:
        ...
    @property
    def transport(self) -> str:
        ...
    @property
    def where(self) -> str:
        ...
class DriveSet:
    def __init__(self, paths: collections.abc.Sequence[str], uring: bool = False, front_end: str = 'auto', read_only: bool = False) -> None:
        ...
    def bus(self) -> tuple[int, int, int]:
        ...
    def filter(self, arg0: str, arg1: str, arg2: typing.SupportsInt | typing.SupportsIndex, arg3: typing.SupportsInt | typing.SupportsIndex, arg4: typing.SupportsInt | typing.SupportsIndex, arg5: typing.SupportsInt | typing.SupportsIndex, arg6: typing.SupportsFloat | typing.SupportsIndex, arg7: typing.SupportsFloat | typing.SupportsIndex, arg8: typing.SupportsInt | typing.SupportsIndex, arg9: typing.SupportsInt | typing.SupportsIndex) -> int:
        ...
    def format(self, force: bool = False) -> None:
        ...
    def gemm(self, arg0: str, arg1: str, arg2: str) -> None:
        ...
    def get(self, arg0: str) -> bytes:
        ...
    def home(self, arg0: str) -> int:
        ...
    def list(self) -> list:
        ...
    def model_clock_ns(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> int:
        """
        drive i's timing-model clock in ns (Device::model_clock_ns)
        """
    def name(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> str:
        ...
    def part_name(self, arg0: str, arg1: typing.SupportsInt | typing.SupportsIndex) -> str:
        ...
    def put(self, arg0: str, arg1: typing_extensions.Buffer, arg2: str, arg3: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], arg4: str) -> None:
        ...
    def reduce(self, arg0: str, arg1: typing.SupportsInt | typing.SupportsIndex) -> float:
        ...
    def remove(self, arg0: str) -> None:
        ...
    def size(self) -> int:
        ...
    def stat(self, arg0: str) -> dict:
        ...
    def statistics(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> dict:
        """
        drive i's statistics log page as a dict
        """
    def striped(self, arg0: str) -> bool:
        ...
class GpuLayerLoader:
    """
    csd::gpu::LayerLoader: use nvme_csd.gpu.LayerLoader
    """
    def __init__(self, dev: Device, layers: collections.abc.Sequence[collections.abc.Sequence[tuple[str, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]]], layer_bytes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], resident: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], buffers: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], buffer_bytes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], direct: bool = True, lanes: typing.SupportsInt | typing.SupportsIndex = 1) -> None:
        ...
    def acquire(self, layer: typing.SupportsInt | typing.SupportsIndex, stream: typing.SupportsInt | typing.SupportsIndex) -> int:
        ...
    def clear_timings(self) -> None:
        ...
    def close(self) -> None:
        ...
    def release(self, layer: typing.SupportsInt | typing.SupportsIndex, stream: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def timings(self) -> list:
        ...
    @property
    def restarts(self) -> int:
        ...
def canonical_dtype(arg0: str) -> str:
    """
    A dtype's text as the object store records it (csd/npy.hpp); CsdError if it is none
    """
def gpu_available() -> bool:
    ...
def gpu_configure(arg0: Device, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing.SupportsInt | typing.SupportsIndex, arg3: typing.SupportsInt | typing.SupportsIndex) -> None:
    ...
def gpu_object_to_gpu(arg0: Device, arg1: str, arg2: typing.SupportsInt | typing.SupportsIndex, arg3: typing.SupportsInt | typing.SupportsIndex, arg4: typing.SupportsInt | typing.SupportsIndex) -> tuple[str, int, float, int]:
    ...
def gpu_slm_to_gpu(arg0: Device, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing.SupportsInt | typing.SupportsIndex, arg3: typing.SupportsInt | typing.SupportsIndex, arg4: typing.SupportsInt | typing.SupportsIndex, arg5: bool) -> tuple[str, int, float]:
    ...
def npy_header_bytes(arg0: str, arg1: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> bytes:
    """
    The .npy header csdctl and the store write for an array of this dtype and shape
    """
def npy_header_size(arg0: bytes) -> int:
    """
    The length of a .npy header from the file's first 12 bytes; CsdError if they do not begin one
    """
def npy_parse_header(arg0: bytes) -> dict:
    """
    A .npy header (the file's first npy_header_size bytes) as the store reads it: dtype, shape, data_bytes, size
    """
def status_name(arg0: typing.SupportsInt | typing.SupportsIndex) -> str:
    """
    English name of an NVMe status value
    """
WIRE: dict = {'programs': {'copy': 1, 'gemm': 2, 'elementwise': 3, 'softmax': 4, 'reduce': 5, 'filter': 6, 'convert': 7, 'checksum': 8, 'conv2d': 9, 'decompress': 10, 'gather': 11, 'embedding_bag': 12}, 'statuses': {'Invalid Command Opcode': 1, 'Invalid Field in Command': 2, 'Data Transfer Error': 4, 'Internal Error': 6, 'Command Abort Requested': 7, 'Command Aborted due to SQ Deletion': 8, 'Invalid Namespace or Format': 11, 'LBA Out of Range': 128, 'Host Aborted Command': 881, 'Invalid Program': 448, 'Invalid Descriptor': 449, 'SLM Range Out of Bounds': 450, 'Invalid Parameters': 451, 'Output Overflow': 452, 'Program Fault': 453, 'Invalid Program Image': 454, 'Program Slot In Use': 455, 'Program Load Bytes Exceeded': 456, 'Hop Limit Exceeded': 457, 'Command Interrupted': 33, 'Compare Failure': 645}, 'nvme_cs_statuses': {'Incompatible Namespace or Format': 389, 'Namespace Not Reachable': 392, 'Invalid Memory Namespace': 395, 'Invalid Memory Range Set': 396, 'Invalid Memory Range Set Identifier': 397, 'Invalid Program Data': 398, 'Invalid Program Index': 399, 'Invalid Program Type': 400, 'Maximum Memory Ranges Exceeded': 401, 'Maximum Memory Range Sets Exceeded': 402, 'Maximum Programs Activated': 403, 'Maximum Program Bytes Exceeded': 404, 'Memory Range Set In Use': 405, 'No Program': 406, 'Overlapping Memory Ranges': 407, 'Program Not Activated': 408, 'Program In Use': 409, 'Program Index Not Downloadable': 410, 'Program Too Big': 411}, 'elementwise_ops': {'add': 0, 'sub': 1, 'mul': 2, 'div': 3, 'max': 4, 'min': 5, 'relu': 16, 'sigmoid': 17, 'tanh': 18, 'gelu': 19, 'axpb': 20, 'exp': 21, 'abs': 22}, 'reduce_ops': {'sum': 0, 'min': 1, 'max': 2, 'mean': 3, 'argmax': 4, 'argmin': 5}, 'dtypes': {'f32': 0, 'f64': 1, 'i32': 2, 'i64': 3}, 'field_types': {'i32': 0, 'i64': 1, 'u32': 2, 'u64': 3, 'f32': 4, 'f64': 5}, 'filter_ops': {'eq': 0, 'ne': 1, 'lt': 2, 'le': 3, 'gt': 4, 'ge': 5, 'between': 6}, 'convert_ops': {'f32_f16': 0, 'f32_bf16': 1, 'f16_f32': 2, 'bf16_f32': 3, 'i8_f32': 4, 'f32_i8': 5, 'u8_f32': 6}, 'checksum_algos': {'crc32c': 0, 'xxh64': 1}, 'decompress_algos': {'zstd': 0, 'lz4': 1}, 'program_modes': {'filter': 0, 'map': 1, 'reduce': 2, 'chase': 3}, 'program_downloaded': 1, 'max_program_params': 8, 'max_chase_hops': 64, 'media_max_stage': 67108864, 'first_unary_elementwise_op': 16}
has_gpu_part: bool
