# Helpers for guest tests (sourced): fail, check, host_check, hexle.
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

# Number of a namespace's LBA bytes (from sysfs).
lba_size() { cat /sys/block/nvme0n1/queue/logical_block_size; }
