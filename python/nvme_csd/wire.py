# SPDX-License-Identifier: MIT
"""The command set's ids, parameter codes and status codes, taken from the bindings (which
take them from spec/csd_spec.h): Python keeps no copy of the wire format. The programs'
parameter layouts are laid out by libcsd's typed calls (csd/programs.hpp, bound as
_core.programs), which device.py and program.py call with these codes."""

from typing import Any, Dict, Tuple

import numpy as np

from . import _core

_W: Dict[str, Any] = _core.WIRE

PROGRAM_IDS: Dict[str, int] = dict(_W["programs"])                 # {"gemm": 2, ...}
STATUS_CODES: Dict[str, int] = dict(_W["statuses"])                # {"Invalid Program": 0x1C0, ...}
NVME_CS_STATUS_CODES: Dict[str, int] = dict(_W["nvme_cs_statuses"])  # the standard front end's: {"Program Not Activated": 0x198, ...}
EW_OPS = dict(_W["elementwise_ops"])
FIRST_UNARY_EW_OP = _W["first_unary_elementwise_op"]
REDUCE_OPS = dict(_W["reduce_ops"])
CHECKSUM_ALGOS = dict(_W["checksum_algos"])
CODECS = dict(_W["decompress_algos"])
PROGRAM_MODES = dict(_W["program_modes"])          # downloaded programs: filter, map, reduce
PROGRAM_DOWNLOADED = _W["program_downloaded"]      # C0h entry type of a downloaded program
MAX_PROGRAM_PARAMS = _W["max_program_params"]
MAX_CHASE_HOPS = _W["max_chase_hops"]               # a chase's largest hop limit (1.2)
MEDIA_MAX_STAGE = _W["media_max_stage"]             # bytes of distinct blocks a media program may read per Execute

# numpy dtypes for the command set's element and field types.
_NP = {"f32": "<f4", "f64": "<f8", "i32": "<i4", "i64": "<i8", "u32": "<u4", "u64": "<u8"}
REDUCE_DTYPES = {np.dtype(_NP[k]): v for k, v in _W["dtypes"].items()}
FIELD_TYPES = {np.dtype(_NP[k]): v for k, v in _W["field_types"].items()}

# Comparison names: the command set's (eq, ne, ...) and the operators they stand for.
_SYMBOLS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
CMP_OPS: Dict[str, int] = dict(_W["filter_ops"])
CMP_OPS.update({_SYMBOLS[k]: v for k, v in _W["filter_ops"].items() if k in _SYMBOLS})

# convert: (from dtype name, to dtype name) -> (op, input element bytes, output element bytes).
_DT = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i8": "int8", "u8": "uint8"}
_SIZE = {"f32": 4, "f16": 2, "bf16": 2, "i8": 1, "u8": 1}
CONVERT: Dict[Tuple[str, str], Tuple[int, int, int]] = {(_DT[a], _DT[b]): (op, _SIZE[a], _SIZE[b])
           for name, op in _W["convert_ops"].items() for a, b in [name.split("_")]}


def status_name(status: int) -> str:
    """English name of an NVMe status value ("Invalid Program")."""
    return _core.status_name(status)
