# SPDX-License-Identifier: MIT
"""Guest test: with csd=off none of the command set is visible."""
from csd_guest import *

c = Checks()
for opc in (SLM_LOAD, SLM_STORE):
    c.status(passthru(opc), INVALID_OPCODE, f"opcode {opc:02x}h")
c.status(slm_write(0, b"abcd"), INVALID_OPCODE, "opcode 81h (SLM Write)")
c.status(slm_read(0, 4), INVALID_OPCODE, "opcode 82h (SLM Read)")
c.status(execute(0x01, [(0, 4), (4, 4)]), INVALID_OPCODE, "opcode 85h (Execute)")
c.status(get_log(0xC0), INVALID_FIELD, "log page C0h")
c.status(get_log(0xC1), INVALID_FIELD, "log page C1h")
idc = passthru(0x06, admin=True, nsid=0, dev="/dev/nvme0", cdw={10: 1}, read_len=4096)
c.ok(idc.data[3072:3076] == bytes(4), "Identify VS bytes are zero")
c.report()
