# SPDX-License-Identifier: MIT
# Peer-to-peer: csd.ko delivers an SLM Read into a peer PCI device's BAR (ivshmem-plain,
# backed by a host file standing in for GPU memory) with PRPs it builds itself; the host
# then finds the bytes in that file. No host (guest RAM) buffer is given to the command.
# Each tenant delivers only into its own sub-window (p2p_windows); the administrator
# (CAP_SYS_ADMIN) into the whole window.
# vm: csd=on slm=64M peer=4M alone
. /csd/tests/lib.sh
peer=$(peer_device) || fail "no ivshmem peer device"
echo "peer device $peer"
as() { user=$1; shift; su -s /bin/sh "$user" -c "$*"; }
a=$(id -u csduser); b=$(id -u csdother); mib=1048576
# the administrator opens the first 2 MiB of BAR 2 (of 4 MiB) to peer-to-peer writes, the
# first MiB csduser's, the second csdother's
insmod /csd/kmod/csd.ko group=990 p2p_peer=$peer p2p_bar=2 p2p_offset=0 p2p_size=$((2 * mib)) \
    p2p_windows=uid:$a=0+$mib,uid:$b=$mib+$mib || fail "insmod"
as csduser "kmod_check p2p /dev/csd0 2 $mib $mib" || fail "peer-to-peer checks in csduser's window"
as csdother "kmod_check p2p-other /dev/csd0 2 $mib 0 $mib" || fail "csdother wrote outside its window"
[ "$(cat /sys/class/csd/csd0/p2p_bytes)" = $((2 * mib)) ] || fail "p2p_bytes counter"
host_check peer-memory $mib            # csduser's pattern, whole: csdother could not write there
host_check peer-memory $mib $mib 17 3  # csdother's, in its own window
echo "each tenant delivered into its own window only"
# a tenant with no window cannot deliver at all
echo "uid:$a=0+$mib" > /sys/module/csd/parameters/p2p_windows
as csdother "kmod_check p2p /dev/csd0 2 4096 8192" > /tmp/out 2>&1 && fail "p2p by a tenant without a window"
grep -q "FAIL peer-to-peer" /tmp/out || { cat /tmp/out; fail "p2p by a tenant without a window should be refused"; }
# overlapping windows, or one outside the administrator's window: refused, with a message
echo "uid:$a=0+$mib,uid:$b=$((mib / 2))+$mib" > /sys/module/csd/parameters/p2p_windows
as csduser "kmod_check p2p /dev/csd0 2 4096 8192" > /tmp/out 2>&1 && fail "p2p with overlapping windows"
dmesg | grep -q "p2p_windows: entries 1 and 2 overlap" || fail "no kernel message for overlapping windows"
echo "uid:$a=$((2 * mib))+4096" > /sys/module/csd/parameters/p2p_windows
as csduser "kmod_check p2p /dev/csd0 2 4096 8192" > /tmp/out 2>&1 && fail "p2p with a window outside the window"
dmesg | grep -q "p2p_windows: bad entry" || fail "no kernel message for a window outside the window"
echo "" > /sys/module/csd/parameters/p2p_windows
as csduser "kmod_check p2p /dev/csd0 2 4096 8192" > /tmp/out 2>&1 && fail "p2p by a tenant with no windows configured"
echo "tenants without a window, overlapping windows and windows outside the window: refused"
# the administrator, with no entry of its own: the whole window
kmod_check p2p /dev/csd0 2 8192 $((2 * mib)) || fail "peer-to-peer by root in the whole window"
rmmod csd
insmod /csd/kmod/csd.ko group=990 || fail "insmod without a peer"
as csduser "kmod_check p2p /dev/csd0 2 4096 8192" > /tmp/out 2>&1 && fail "p2p without a configured peer"
grep -q "FAIL peer-to-peer" /tmp/out || { cat /tmp/out; fail "p2p without a configured peer should be refused"; }
rmmod csd
if dmesg | grep -E 'WARNING|BUG|Oops' ; then fail "kernel log has a WARN, BUG or oops"; fi
echo "peer-to-peer delivery checked from the host; refused outside the tenant's window, the configured window and without a configured peer"
