# SPDX-License-Identifier: MIT
# csd.ko reads the ids of its `partitions` and `p2p_windows` entries in the initial user
# namespace: a user who maps another tenant's uid onto its own in an unprivileged user
# namespace (unshare(CLONE_NEWUSER)) is still itself. csdother, who has no partition, must
# not reach csduser's object store (found by an outside review: it could).
# vm: csd=on slm=64M alone timeout=300
. /csd/tests/lib.sh
insmod /csd/kmod/csd.ko group=990 || fail "insmod csd.ko"
as() { user=$1; shift; su -s /bin/sh "$user" -c "$*"; }
a=$(id -u csduser); part=65536
echo "uid:$a=0+$part" > /sys/module/csd/parameters/partitions
as csduser "csdctl -d /dev/csd0?slm=4M format >/dev/null && echo secret-of-csduser > /tmp/a && csdctl -d /dev/csd0?slm=4M put mine-a /tmp/a" || fail "csduser's store"
as csdother "csdctl -d /dev/csd0?slm=4M ls" >/dev/null 2>&1 && fail "csdother opened /dev/csd0 without a partition"
echo "csdother, without a partition, is refused (as intended)"
cat > /tmp/userns.py <<PY
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
uid, gid = os.getuid(), os.getgid()
if libc.unshare(0x10000000) != 0:
    print("unshare(CLONE_NEWUSER) refused, errno", ctypes.get_errno()); sys.exit(42)
open("/proc/self/setgroups", "w").write("deny")
open("/proc/self/uid_map", "w").write("$a %d 1" % uid)
open("/proc/self/gid_map", "w").write("%d %d 1" % (gid, gid))
os.execvp(sys.argv[1], sys.argv[1:])
PY
chmod 644 /tmp/userns.py
rc=0; as csdother "python3 /tmp/userns.py csdctl -d /dev/csd0?slm=4M get mine-a /tmp/stolen" || rc=$?
[ $rc = 42 ] && fail "this kernel refuses unprivileged user namespaces: nothing shown"
if [ $rc = 0 ] && grep -q secret-of-csduser /tmp/stolen; then
    echo "csdother read csduser's object: $(cat /tmp/stolen)"
    fail "a tenant took another tenant's partition through a user namespace"
fi
echo "csdother could not reach csduser's partition"
echo "" > /sys/module/csd/parameters/partitions
rmmod csd
