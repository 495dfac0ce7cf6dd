# SPDX-License-Identifier: MIT
# csd.ko: a program slot stays its owner's across the drive's commands (two tenants, as
# processes of two users with several threads, race over one slot: double unloads, an
# unload during an upload, an Execute during an unload and another's load), and the
# per-user quotas of program slots and of image bytes being uploaded.
# vm: csd=on slm=64M alone timeout=900
. /csd/tests/lib.sh
insmod /csd/kmod/csd.ko group=990 || fail "insmod csd.ko"
rounds=${CSD_RACE_ROUNDS:-40}
kmod_check program-race /dev/csd0 csduser csdother /csd/bpf "$rounds" || fail "program ownership races"
kmod_check program-quota /dev/csd0 csduser csdother /csd/bpf || fail "program quotas"
# every tenant has closed its files: no downloaded program is left on the drive (C0h)
nvme get-log /dev/nvme0 --log-id=0xc0 --log-len=4096 --raw-binary > /tmp/c0 || fail "C0h"
left=$(python3 -c '
import struct, sys
p = open("/tmp/c0", "rb").read()
n = struct.unpack_from("<I", p, 28)[0]
print(" ".join("%04x" % i for i in (struct.unpack_from("<H", p, 64 + 32 * k)[0] for k in range(n)) if i >= 0x100))')
[ -z "$left" ] || fail "downloaded programs still loaded: $left"
echo "no downloaded program left loaded"
rmmod csd || fail "rmmod after all files closed"
if dmesg | grep -E 'WARNING|BUG|Oops|general protection|hung_task' ; then fail "kernel log has a WARN, BUG or oops"; fi
echo "kernel log clean"
