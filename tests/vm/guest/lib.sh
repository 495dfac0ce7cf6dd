# SPDX-License-Identifier: MIT
# Helpers for guest tests (sourced): fail, check, host_check, hexle, peer_device.
set -eu

# Prints a message and fails the test.
fail() { echo "FAIL: $*"; exit 1; }

# The generic char device of the NVM namespace: the /dev/ngXnY of the one namespace with a
# block device (the kernel names nodes in discovery order, so with csd.nvme-cs=on the NVM
# namespace need not be ng0n1; the memory and compute namespaces have no block device).
nvm_ng() {
    for b in /dev/nvme0n*; do
        if [ -b "$b" ]; then echo "/dev/ng${b#/dev/nvme}"; return 0; fi
    done
    echo /dev/ng0n1
}

# Runs a command; fails the test with its output when it does not succeed.
check() {
    if ! out=$("$@" 2>&1); then
        echo "$out"
        fail "command failed: $*"
    fi
}

# Asks the host to run tests/vm/host/NAME.sh ARGS (with CSD_DISK = the namespace's backing
# file) while the guest waits; fails the test when the host check fails.
host_check() {
    echo "@@CSD HOSTCHECK $*"
    read -r reply || fail "no answer from the host for check $1"
    [ "$reply" = "@@HOST 0" ] || fail "host check '$*' failed ($reply)"
    echo "host check $1: ok"
}

# Prints the PCI address of the ivshmem-plain peer (csdvm's peer=SIZE); 1 if there is none.
peer_device() {
    for d in /sys/bus/pci/devices/*; do
        if [ "$(cat $d/vendor):$(cat $d/device)" = "0x1af4:0x1110" ]; then basename $d; return 0; fi
    done
    return 1
}

# Number of a namespace's LBA bytes (from sysfs).
lba_size() { cat /sys/block/nvme0n1/queue/logical_block_size; }

# Loads the NVMe/TCP target and host modules (and virtio-net) and mounts configfs.
fabric_modules() {
    for m in configfs nvmet nvmet-tcp nvme-fabrics nvme-tcp failover net_failover virtio_net; do
        grep -q "^$(echo $m | tr - _) " /proc/modules || insmod /modules/$m.ko || fail "insmod $m"
    done
    grep -q " /sys/kernel/config " /proc/mounts || mount -t configfs none /sys/kernel/config || fail "mount configfs"
    ip link set lo up || fail "loopback up"
}

# Brings up eth0 (virtio-net linked to a partner guest by the harness) with address ADDR/24.
fabric_link() {
    i=0
    while [ ! -e /sys/class/net/eth0 ]; do
        i=$((i + 1)); [ $i -lt 100 ] || fail "no eth0 (virtio-net)"; usleep 100000
    done
    ip addr add "$1/24" dev eth0 || fail "address on eth0"
    ip link set eth0 up || fail "eth0 up"
}

# The subsystem NQN under which fabric_export serves a drive of serial number SERIAL.
fabric_nqn() { echo "nqn.2026-11.io.nvme-csd:$1"; }

# Exports CONTROLLER (e.g. /dev/nvme0) through nvmet passthrough on TCP ADDR:4420, port PORTID,
# as subsystem $(fabric_nqn SERIAL-of-the-controller) (one NQN per drive: the host refuses two
# controllers of one subsystem with the same controller ID).
fabric_export() {
    cfg=/sys/kernel/config/nvmet
    sub=$cfg/subsystems/$(fabric_nqn "$(tr -d ' ' < /sys/class/nvme/${1#/dev/}/serial)")
    mkdir $sub || fail "nvmet subsystem"
    echo 1 > $sub/attr_allow_any_host
    echo -n "$1" > $sub/passthru/device_path || fail "passthru device_path"
    echo 1 > $sub/passthru/enable || fail "passthru enable"
    mkdir $cfg/ports/$3
    echo tcp > $cfg/ports/$3/addr_trtype
    echo ipv4 > $cfg/ports/$3/addr_adrfam
    echo "$2" > $cfg/ports/$3/addr_traddr
    echo 4420 > $cfg/ports/$3/addr_trsvcid
    ln -s $sub $cfg/ports/$3/subsystems/ || fail "nvmet port"
}

# Connects to the drive of serial SERIAL exported at TCP ADDR:4420 (trying for up to TRIES
# seconds) and prints the fabric namespace's /dev/ngXnY; HOSTNUM makes the host NQN (and its
# matching host ID). Usage: fabric_connect ADDR TRIES HOSTNUM SERIAL
fabric_connect() {
    hostid=00000000-0000-4000-8000-00000000000$3
    before=$(ls /sys/class/nvme)
    i=0
    until nvme connect -t tcp -a "$1" -s 4420 -n "$(fabric_nqn "$4")" \
            --hostnqn=nqn.2014-08.org.nvmexpress:uuid:$hostid --hostid=$hostid > /dev/null 2>&1; do
        i=$((i + 1))
        [ $i -lt "$2" ] || { dmesg | tail -15 >&2; fail "nvme connect to $1" >&2; }
        sleep 1
    done
    # the new controller (transport tcp) and its namespace's node, once the scan made them
    for i in $(seq 30); do
        for c in /sys/class/nvme/nvme*; do
            n=$(basename $c)
            case " $(echo $before) " in *" $n "*) continue ;; esac
            [ "$(cat $c/transport)" = tcp ] || continue
            for b in /dev/${n}n*; do
                if [ -b "$b" ]; then echo "/dev/ng${b#/dev/nvme}"; return 0; fi
            done
        done
        sleep 1
    done
    ls -l /dev/ng* /dev/nvme* >&2
    fail "no namespace node on the TCP controller to $1" >&2
}

# The controller (nvmeX) of a namespace's generic node NG (/dev/ngXnY).
ctrl_of() {
    c=${1#/dev/ng}
    echo "nvme${c%%n*}"
}

# Disconnects the fabric controller of namespace node NG (/dev/ngXnY).
fabric_disconnect() {
    nvme disconnect -d "$(ctrl_of "$1")" > /dev/null || fail "nvme disconnect $(ctrl_of "$1")"
}
