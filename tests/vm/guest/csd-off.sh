# SPDX-License-Identifier: MIT
# With csd off the device is stock: the vendor opcodes are Invalid Command Opcode, the
# log pages C0h/C1h do not exist, Identify carries no CSD1 signature (and nvme csd says so).
# vm: csd=off
. /csd/tests/lib.sh
# nvme csd (host/nvme-cli-plugin) refuses the drive, naming why
if out=$(nvme csd info /dev/nvme0 2>&1); then fail "nvme csd info succeeded on a stock drive: $out"; fi
[ "$out" = 'csd info: nvme0 is not a CSD (Identify Controller bytes 3072..3075 are not "CSD1")' ] ||
    fail "nvme csd info on a stock drive: $out"
echo "nvme csd refuses a stock drive: ok"
exec python3 /csd/tests/csd_off.py
