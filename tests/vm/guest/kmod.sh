# SPDX-License-Identifier: MIT
# csd.ko: attach, sysfs, access by group, isolation between two non-root users, cleanup
# on exit and on kill -9, bad arguments, unload refused while open, libcsd's suite and the
# C API through /dev/csd0 as a non-root user, each tenant's LBA partition (and its own
# object store), and a clean kernel log.
# vm: csd=on slm=64M alone timeout=300
. /csd/tests/lib.sh
insmod /csd/kmod/csd.ko group=990 || fail "insmod csd.ko"
[ -c /dev/csd0 ] || fail "/dev/csd0 missing"
ls -l /dev/csd0 | grep -q '^crw-rw----.* csd ' || { ls -l /dev/csd0; fail "/dev/csd0 is not 0660 group csd"; }
[ "$(cat /sys/class/csd/csd0/slm_size)" = 67108864 ] || fail "sysfs slm_size"
[ "$(cat /sys/class/csd/csd0/compute_units)" = 2 ] || fail "sysfs compute_units"
grep -q '^0002 gemm$' /sys/class/csd/csd0/programs || fail "sysfs programs"
echo "attached: /dev/csd0, sysfs slm_size compute_units programs"

as() { user=$1; shift; su -s /bin/sh "$user" -c "$*"; }
# a user outside the group cannot open it
as nobody "kmod_check free /dev/csd0" 2>/dev/null && fail "nobody opened /dev/csd0"
echo "a user outside group csd is refused"

free0=$(as csduser "kmod_check free /dev/csd0")
as csduser "kmod_check hold /dev/csd0 /tmp/handle" & holder=$!
i=0; while [ ! -s /tmp/handle ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
[ -s /tmp/handle ] || fail "holder did not start"
as csdother "kmod_check probe /dev/csd0 $(cat /tmp/handle)" || fail "isolation checks"
rmmod csd 2>/dev/null && fail "csd.ko unloaded while a file was open"
echo "unload refused while /dev/csd0 is open"
kill -9 $(pidof kmod_check) || fail "no holder to kill"
wait $holder 2>/dev/null || true
i=0; while [ "$(as csduser "kmod_check free /dev/csd0")" != "$free0" ] && [ $i -lt 50 ]; do usleep 100000; i=$((i + 1)); done
[ "$(as csduser "kmod_check free /dev/csd0")" = "$free0" ] || fail "SLM of a killed process was not freed"
echo "the killed holder's SLM came back ($free0 bytes free)"
as csduser "kmod_check badargs /dev/csd0" || fail "bad-argument checks"
as csduser "kmod_check zero-race /dev/csd0" || fail "a new allocation showed old data"

# Downloaded programs belong to the file that loaded them.
as csduser "kmod_check program-hold /dev/csd0 /csd/bpf/threshold.o /tmp/slot" & holder=$!
i=0; while [ ! -s /tmp/slot ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
[ -s /tmp/slot ] || fail "program holder did not start"
slot=$(cat /tmp/slot)
as csdother "kmod_check program-probe /dev/csd0 $slot /csd/bpf/threshold.o" || fail "program isolation checks"
kill -9 $(pidof kmod_check) || fail "no program holder to kill"
wait $holder 2>/dev/null || true
sleep 1
if nvme get-log /dev/nvme0 --log-id=0xc0 --log-len=4096 --raw-binary | od -A d -t x2 -j 64 -v | grep -q " $(printf %04x "$slot") "; then
    fail "the killed holder's program $slot is still loaded"
fi
echo "tenants cannot run or unload each other's programs; a killed tenant's program is unloaded"
[ "$(as csduser "kmod_check free /dev/csd0")" = "$free0" ] || fail "SLM of an exited process was not freed"

as csduser "CSD_TEST_DEVICE=/dev/csd0 csd-library-tests --gtest_brief=1" || fail "libcsd suite through csd.ko"
as csduser "csd-c-api-test /dev/csd0" || fail "C API through csd.ko"
as csdother "cd /csd/python && CSD_TEST_DEVICE=/dev/csd0 CSD_TEST_DEVICE_ONLY=1 python3 -m pytest -q -rs -p no:cacheprovider tests" \
    || fail "Python suite through csd.ko"
# LBA partitions: each tenant sees its own range of the namespace as the whole of it.
a=$(id -u csduser); b=$(id -u csdother); part=65536
echo "uid:$a=0+$part,uid:$b=$part+$part" > /sys/module/csd/parameters/partitions
as csduser "kmod_check partition /dev/csd0 $part A" || fail "csduser's partition"
as csdother "kmod_check partition /dev/csd0 $part B" || fail "csdother's partition"
# what each wrote landed in its own range of the namespace (read as root, raw)
[ "$(dd if=/dev/nvme0n1 iflag=direct bs=512 skip=0 count=1 2>/dev/null | head -c 4)" = AAAA ] || fail "csduser's LBA 0 is not namespace LBA 0"
[ "$(dd if=/dev/nvme0n1 iflag=direct bs=512 skip=$part count=1 2>/dev/null | head -c 4)" = BBBB ] || fail "csdother's LBA 0 is not namespace LBA $part"
[ "$(dd if=/dev/nvme0n1 iflag=direct bs=512 skip=$((2 * part - 1)) count=1 2>/dev/null | head -c 4)" = BBBB ] || fail "csdother's last LBA"
echo "tenants' LBAs are disjoint ranges of the namespace; nothing past a partition is reachable"
# one object store per partition (csduser's partition holds the store the whole-namespace
# suites above made: format over it, --force)
as csduser "csdctl -d /dev/csd0?slm=4M format --force >/dev/null && echo a > /tmp/a && csdctl -d /dev/csd0?slm=4M put mine-a /tmp/a" || fail "csduser's store"
as csdother "csdctl -d /dev/csd0?slm=4M ls" 2>/dev/null && fail "csdother sees a store it never formatted"
as csdother "csdctl -d /dev/csd0?slm=4M format >/dev/null && echo b > /tmp/b && csdctl -d /dev/csd0?slm=4M put mine-b /tmp/b" || fail "csdother's store"
[ "$(as csduser "csdctl -d /dev/csd0?slm=4M --json ls" | python3 -c 'import json,sys; print([o["name"] for o in json.load(sys.stdin)])')" = "['mine-a']" ] || fail "csduser's store holds another's object"
[ "$(as csdother "csdctl -d /dev/csd0?slm=4M --json ls" | python3 -c 'import json,sys; print([o["name"] for o in json.load(sys.stdin)])')" = "['mine-b']" ] || fail "csdother's store holds another's object"
echo "each tenant has its own object store"
echo "uid:$a=0+$part" > /sys/module/csd/parameters/partitions
as csdother "kmod_check free /dev/csd0" 2>/dev/null && fail "a tenant without a partition opened /dev/csd0"
echo "uid:$a=524000+$part" > /sys/module/csd/parameters/partitions
as csduser "kmod_check free /dev/csd0" 2>/dev/null && fail "a partition past the namespace's end was accepted"
dmesg | grep -q "partitions: bad entry" || fail "no kernel message for a bad partition"
echo "" > /sys/module/csd/parameters/partitions
echo "a tenant with no partition is refused; a bad partition is refused with a kernel message"

rmmod csd || fail "rmmod after all files closed"
if dmesg | grep -E 'WARNING|BUG|Oops|general protection' ; then fail "kernel log has a WARN, BUG or oops"; fi
echo "kernel log clean"
