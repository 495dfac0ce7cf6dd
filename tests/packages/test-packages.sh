#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The packages of 'make deb' (build/deb) as a user meets them: installed with
# 'apt install ./NAME.deb' into a fresh Debian 12 root (ci/root-lib.sh: debootstrap from
# this machine's archive, nothing of the project in it), then smoke-tested there:
#   csdctl      --version, format/put/get/checksum on the in-process device (emu:), --json,
#               its man page and bash completion where Debian's tools look for them
#   libcsd-dev  a C and a C++ program built with 'pkg-config --cflags --libs csd' and run,
#               and the SNIA API's usage flow (examples/snia/flow.c) with 'pkg-config csd-snia'
#   wheel       pip install of the wheel into a venv (numpy from Debian), a store round trip
#   QEMU        csd-qemu-system-x86_64 beside Debian's, booting the guest (tests/vm/csdvm.py,
#               the guest image of 'make image') and seeing the CSD; nothing of Debian's qemu
#   csd-dkms    registered with DKMS, and built by DKMS against the guest kernel's headers
# Prints 'packages: N passed, N failed' last. Usage: tests/packages/test-packages.sh (root)
# Environment: ROOT (default /var/tmp/nvme-csd-packages), DEB_DIR (default build/deb).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
root=${ROOT:-/var/tmp/nvme-csd-packages}
debs=${DEB_DIR:-$top/build/deb}
pass=0 fail=0
say() { echo "packages: $*"; }
check() {  # NAME, then a command run in the root: counts it, shows its output on failure
    local name=$1 out
    shift
    if out=$(root_run "$*" 2>&1); then
        pass=$((pass + 1)); echo "ok   $name"
    else
        fail=$((fail + 1)); echo "FAIL $name"; echo "$out" | tail -n 30 | sed 's/^/    /'
    fi
}
finish() { echo "packages: $pass passed, $fail failed"; [ $fail = 0 ]; }

compgen -G "$debs/*.deb" >/dev/null && compgen -G "$debs/nvme_csd-*.whl" >/dev/null ||
    { echo "packages: no packages in $debs (make deb)"; fail=1; finish; exit 1; }
. "$top/ci/root-lib.sh"
trap root_cleanup EXIT
root_cleanup
root_make ca-certificates,python3 || { fail=1; finish; exit 1; }
root_mount nvme-csd   # the guest kernel's headers (images/fetch-kernel.sh) live in its cache
mkdir -p "$root/tmp/pkgs"
cp "$debs"/*.deb "$debs"/nvme_csd-*.whl "$root/tmp/pkgs/"
cp "$top/tests/packages/smoke.c" "$top/tests/packages/smoke.cc" "$top/examples/snia/flow.c" "$root/tmp/pkgs/"

# Beside the packages: what the smoke test builds and runs with (gcc, g++, pkg-config, a
# venv, numpy, man, bash-completion) and pahole (dwarves), which Debian's 6.12 kernel
# headers need to build any module (BTF); the test uses the guest kernel's headers unpacked.
say "apt install ./*.deb and the smoke test's tools"
check "apt install ./libcsd0 ./libcsd-dev ./csdctl ./nvme-csd-qemu ./csd-dkms" \
    "apt-get update -qq && cd /tmp/pkgs && apt-get install -y -qq --no-install-recommends ./*.deb gcc g++ pkg-config \
     python3-venv python3-numpy bash-completion man-db dwarves >/dev/null"

# ------------------------------------------------------------------ csdctl
dev='emu:/tmp/smoke.img?size=64M&slm=32M'
check "csdctl --version names the installed libcsd" \
    "csdctl --version | grep -qx 'csdctl [0-9.]* (libcsd [0-9.]*)' && test \"\$(csdctl --version | cut -d' ' -f2)\" = \"\$(dpkg-query -W -f='\${Version}' libcsd0 | cut -d- -f1)\""
check "csdctl on the in-process device: format, put -, get -, checksum" \
    "csdctl -d '$dev' format && head -c 1000000 /dev/urandom > /tmp/r && csdctl -d '$dev' put r - < /tmp/r &&
     csdctl -d '$dev' get r - | cmp - /tmp/r &&
     csdctl -d '$dev' --json run checksum r | python3 -c 'import json,sys; assert json.load(sys.stdin)[\"checksum\"]'"
check "csdctl error as JSON with the NVMe status, exit 1" \
    "out=\$(csdctl -d '$dev' --json program unload 0x100); test \$? = 1 && echo \"\$out\" | grep -q '\"status\":\"Invalid Program'"
check "man csdctl finds the page (EXIT STATUS section)" "man -P cat csdctl 2>/dev/null | grep -q 'EXIT STATUS'"
check "bash completion loads from bash-completion's folder" \
    "bash -c '. /usr/share/bash-completion/bash_completion; _completion_loader csdctl; complete -p csdctl | grep -q _csdctl'"

# ------------------------------------------------------------------ libcsd-dev
check "libcsd: versioned soname, libcsd.so only in -dev" \
    "objdump -p /usr/lib/*/libcsd.so.0 | grep -q 'SONAME *libcsd.so.0' && dpkg -S /usr/lib/*/libcsd.so | grep -q '^libcsd-dev:'"
check "a C program built with pkg-config csd (csd_version, the spec header, the device)" \
    "cd /tmp/pkgs && cc -Wall -Werror smoke.c -o smoke-c \$(pkg-config --cflags --libs csd) && ./smoke-c '$dev'"
check "a C++17 program built with pkg-config csd (csd::Device, ObjectStore)" \
    "cd /tmp/pkgs && c++ -std=c++17 -Wall -Werror smoke.cc -o smoke-cc \$(pkg-config --cflags --libs csd) && ./smoke-cc '$dev'"
check "the SNIA API's usage flow built with pkg-config csd-snia (cs.h) runs on the in-process device" \
    "cd /tmp/pkgs && cc -Wall -Werror flow.c -o snia-flow \$(pkg-config --cflags --libs csd-snia) && ./snia-flow >/tmp/flow.out &&
     grep -qx 'snia-flow: [0-9]* passed, 0 failed' /tmp/flow.out"

# ------------------------------------------------------------------ the wheel
check "pip install the wheel; a store round trip from Python" \
    "python3 -m venv --system-site-packages /tmp/venv && /tmp/venv/bin/pip install -q --no-index --no-deps /tmp/pkgs/nvme_csd-*.whl &&
     cd / && /tmp/venv/bin/python -c '
import numpy as np, nvme_csd
with nvme_csd.open(\"emu:/tmp/py.img?size=64M&slm=32M\") as dev:
    dev.store.format()
    a = np.arange(4096, dtype=np.float32).reshape(64, 64)
    dev.store[\"a\"] = a
    assert (dev.store[\"a\"] == a).all()
    print(\"python ok\", dev.stats[\"exec_cmds\"] >= 0)'"

# ------------------------------------------------------------------ QEMU
check "csd-qemu-system-x86_64 beside Debian's (no /usr/bin/qemu-system-x86_64 installed)" \
    "csd-qemu-system-x86_64 --version | grep -q 'QEMU emulator version' && ! test -e /usr/bin/qemu-system-x86_64 &&
     csd-qemu-system-x86_64 -device help | grep -q '\"nvme\"'"
# The harness (tests/vm), the guest image and the staged guest, read-only; the firmware is
# the package's (its ../share/qemu, Debian's files).
mkdir -p "$root/root/vm/build/images" "$root/root/vm/build/guest" "$root/root/vm/build/share"
cp -a "$top/tests" "$root/root/vm/"
mount --bind -o ro "$(readlink -f "$top/build/images")" "$root/root/vm/build/images" 2>/dev/null ||
    mount --bind "$(readlink -f "$top/build/images")" "$root/root/vm/build/images"
mount --bind "$top/build/guest" "$root/root/vm/build/guest"
ln -s /usr/lib/nvme-csd/share/qemu "$root/root/vm/build/share/qemu"
check "the guest boots on the packaged QEMU and sees the CSD (csdctl info in the guest)" \
    "cd /root/vm && CSD_QEMU=/usr/bin/csd-qemu-system-x86_64 timeout 300 python3 tests/vm/csdvm.py cmd 'csdctl info' | tee /tmp/vm.log | grep -q '^compute units'"

# ------------------------------------------------------------------ csd-dkms
krel=$(cat "$top/build/images/kernel-release")
kroot=$(readlink -f "$top/build/images/kernel-root")
check "dkms knows csd $(dpkg-deb -f "$debs"/csd-dkms_*.deb Version | cut -d- -f1)" \
    "dkms status csd | grep -q '^csd/'"
check "dkms builds csd.ko for the guest kernel $krel" \
    "ver=\$(dpkg-query -W -f='\${Version}' csd-dkms | cut -d- -f1) &&
     dkms build -m csd -v \$ver -k $krel --kernelsourcedir $kroot/usr/src/linux-headers-$krel >/tmp/dkms.log 2>&1 ||
     { cat /tmp/dkms.log /var/lib/dkms/csd/\$ver/build/make.log 2>/dev/null; false; } &&
     modinfo -F vermagic /var/lib/dkms/csd/\$ver/$krel/x86_64/module/csd.ko* | grep -q '^$krel '"
finish
