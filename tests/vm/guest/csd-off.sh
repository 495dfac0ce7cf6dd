# SPDX-License-Identifier: MIT
# With csd off the device is stock: the vendor opcodes are Invalid Command Opcode, the
# log pages C0h/C1h do not exist, Identify carries no CSD1 signature.
# vm: csd=off
exec python3 /csd/tests/csd_off.py
