# Peer-to-peer: csd.ko delivers an SLM Read into a peer PCI device's BAR (ivshmem-plain,
# backed by a host file standing in for GPU memory) with PRPs it builds itself; the host
# then finds the bytes in that file. No host (guest RAM) buffer is given to the command.
# vm: csd=on slm=64M peer=4M alone
. /csd/tests/lib.sh
peer=""
for d in /sys/bus/pci/devices/*; do
    [ "$(cat $d/vendor):$(cat $d/device)" = "0x1af4:0x1110" ] && peer=$(basename $d)
done
[ -n "$peer" ] || fail "no ivshmem peer device"
echo "peer device $peer"
# the administrator opens the first 2 MiB of BAR 2 (of 4 MiB) to peer-to-peer writes
insmod /csd/kmod/csd.ko group=990 p2p_peer=$peer p2p_bar=2 p2p_offset=0 p2p_size=2097152 || fail "insmod"
su -s /bin/sh csduser -c "kmod_check p2p /dev/csd0 2 1048576 2097152" || fail "peer-to-peer checks"
[ "$(cat /sys/class/csd/csd0/p2p_bytes)" = 1048576 ] || fail "p2p_bytes counter"
host_check peer-memory 1048576
rmmod csd
insmod /csd/kmod/csd.ko group=990 || fail "insmod without a peer"
su -s /bin/sh csduser -c "kmod_check p2p /dev/csd0 2 4096 8192" > /tmp/out 2>&1 && fail "p2p without a configured peer"
grep -q "FAIL peer-to-peer" /tmp/out || { cat /tmp/out; fail "p2p without a configured peer should be refused"; }
rmmod csd
if dmesg | grep -E 'WARNING|BUG|Oops' ; then fail "kernel log has a WARN, BUG or oops"; fi
echo "peer-to-peer delivery checked from the host; refused outside the configured window and without a configured peer"
