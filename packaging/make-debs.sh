#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make deb: Debian packages of nvme-csd, built with dpkg-deb into build/deb, that a user
# installs with 'apt install ./NAME_VERSION_ARCH.deb':
#   libcsd0        the shared libraries (libcsd.so.0, libcsd-emu.so, libcsd-snia.so.0 and
#                  whatever else meson installs beside them)
#   libcsd-dev     headers (include/nvme-csd, the command set's spec headers and the SNIA
#                  API's cs.h among them), libcsd.so, libcsd-snia.so and pkg-config's csd.pc
#                  and csd-snia.pc
#   csdctl         the command line, its man page and bash completion
#   nvme-csd-qemu  the project's QEMU as /usr/lib/nvme-csd/bin/qemu-system-x86_64 and
#                  /usr/bin/csd-qemu-system-x86_64, beside (never over) Debian's qemu;
#                  its firmware is Debian's (qemu-system-data, seabios, ipxe-qemu)
#   csd-dkms       csd.ko's source for DKMS (/usr/src/csd-VERSION)
# and the Python wheel (nvme_csd-VERSION-*.whl, 'pip install' it).
# The library and tool packages hold exactly what 'meson install' installs (a build of
# their own, build/deb/meson, prefix /usr): a file no rule below claims stops the build.
# Dependencies come from the binaries (dpkg-shlibdeps). QEMU is the one already built
# (build/qemu, 'make qemu'); it is not rebuilt here.
# Usage: packaging/make-debs.sh   Environment: DEB_OUT (default build/deb), PYTHON
# (the interpreter the wheel is for, default /usr/bin/python3), DEB_REVISION (default 1).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${DEB_OUT:-$top/build/deb}
py=${PYTHON:-/usr/bin/python3}
say() { echo "deb: $*"; }
die() { echo "deb: $*" >&2; exit 1; }

version=$(sed -n "s/^  version: '\([^']*\)',$/\1/p" "$top/meson.build")
[ -n "$version" ] || die "no version in meson.build"
debver="$version-${DEB_REVISION:-1}"
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
maintainer="nvme-csd developers <nvme-csd@localhost>"
mkdir -p "$out"

# ---------------------------------------------------------------- libraries and csdctl
mb="$out/meson"
if [ -f "$mb/build.ninja" ]; then
    meson setup --reconfigure "$mb" >/dev/null
else
    meson setup "$mb" "$top" --prefix=/usr --libdir="lib/$multiarch" --buildtype=release \
        -Dtests=disabled -Dfuzz=disabled -Dcuda=disabled >/dev/null
fi
say "building $version (meson, $mb)"
nice -n 10 ninja -C "$mb" -j "${DEB_JOBS:-2}" >/dev/null
stage="$out/stage"
rm -rf "$stage"
DESTDIR="$stage" meson install -C "$mb" --no-rebuild --strip --quiet

work="$out/work"   # debian/PACKAGE/ trees, as dpkg-shlibdeps expects them
rm -rf "$work"
mkdir -p "$work/debian"
tree() { echo "$work/debian/$1"; }
# Every installed file (or link) into exactly one package.
while IFS= read -r f; do
    case "$f" in
        usr/include/* | "usr/lib/$multiarch/pkgconfig/"*) pkg=libcsd-dev ;;
        "usr/lib/$multiarch/"*.so) [ -L "$stage/$f" ] && pkg=libcsd-dev || pkg=libcsd0 ;;  # a dlopen()ed module is runtime
        "usr/lib/$multiarch/"*) pkg=libcsd0 ;;
        usr/bin/csdctl | usr/share/man/man1/csdctl.1 | usr/share/bash-completion/completions/csdctl) pkg=csdctl ;;
        *) die "no package claims /$f (what meson installs): add a rule to packaging/make-debs.sh" ;;
    esac
    mkdir -p "$(dirname "$(tree $pkg)/$f")"
    cp -a "$stage/$f" "$(tree $pkg)/$f"
done < <(cd "$stage" && find . -type f -o -type l | sed 's|^\./||' | sort)
gzip -9nf "$(tree csdctl)/usr/share/man/man1/csdctl.1"

# ---------------------------------------------------------------- QEMU
qemu="$top/build/qemu/qemu-system-x86_64"
[ -x "$qemu" ] || die "$qemu missing: make qemu (or copy a built one into build/qemu)"
q=$(tree nvme-csd-qemu)
mkdir -p "$q/usr/lib/nvme-csd/bin" "$q/usr/lib/nvme-csd/share/qemu" "$q/usr/bin"
strip --strip-unneeded -o "$q/usr/lib/nvme-csd/bin/qemu-system-x86_64" "$qemu"
ln -s ../lib/nvme-csd/bin/qemu-system-x86_64 "$q/usr/bin/csd-qemu-system-x86_64"
# QEMU looks for firmware in ../share/qemu beside its binary: Debian's, linked (the list
# qemu-device/build-qemu.sh copies into build/share/qemu).
for f in /usr/share/qemu/qboot.rom /usr/share/qemu/linuxboot_dma.bin /usr/share/qemu/kvmvapic.bin \
         /usr/share/seabios/bios-256k.bin /usr/share/seabios/vgabios-stdvga.bin /usr/lib/ipxe/qemu/efi-e1000.rom; do
    ln -s "$f" "$q/usr/lib/nvme-csd/share/qemu/$(basename "$f")"
done

# ---------------------------------------------------------------- csd.ko for DKMS
k=$(tree csd-dkms)
src="$k/usr/src/csd-$version"
mkdir -p "$src/uapi" "$k/usr/lib/udev/rules.d"
cp "$top"/kmod/*.c "$top"/kmod/*.h "$top/kmod/Kbuild" "$src/"
cp "$top/kmod/uapi/csd_ioctl.h" "$src/uapi/"
cp "$top/spec/csd_spec.h" "$src/"
nvme_h="$top/build/images/nvme-private/nvme.h"   # nvme-core's private header (images/fetch-kernel.sh)
[ -f "$nvme_h" ] || die "$nvme_h missing: make image"
cp "$nvme_h" "$src/nvme.h"
krel=$(cat "$top/build/images/kernel-release")
kseries=$(echo "$krel" | cut -d. -f1,2)
sed -e "s/@VERSION@/$version/g" -e "s/@KSERIES@/${kseries//./\\\\.}/g" "$top/packaging/dkms.conf.in" > "$src/dkms.conf"
cp "$top/kmod/99-csd.rules" "$k/usr/lib/udev/rules.d/"

# ---------------------------------------------------------------- control files
for pkg in libcsd0 libcsd-dev csdctl nvme-csd-qemu csd-dkms; do
    mkdir -p "$(tree $pkg)/DEBIAN" "$(tree $pkg)/usr/share/doc/$pkg"
    { echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
      echo "Upstream-Name: nvme-csd"
      echo
      echo "Files: *"
      echo "License: $([ $pkg = csd-dkms ] || [ $pkg = nvme-csd-qemu ] && echo GPL-2.0-or-later || echo MIT)"
      echo "Comment: per-file SPDX lines; the licence texts are in the sources' LICENSES/."
    } > "$(tree $pkg)/usr/share/doc/$pkg/copyright"
done
echo "libcsd 0 libcsd0 (>= $version)" > "$(tree libcsd0)/DEBIAN/shlibs"
echo "activate-noawait ldconfig" > "$(tree libcsd0)/DEBIAN/triggers"
sed "s/@VERSION@/$version/g" "$top/packaging/csd-dkms.postinst" > "$k/DEBIAN/postinst"
sed "s/@VERSION@/$version/g" "$top/packaging/csd-dkms.prerm" > "$k/DEBIAN/prerm"
chmod 755 "$k/DEBIAN/postinst" "$k/DEBIAN/prerm"

# debian/control as dpkg-shlibdeps reads it (the packages built here, for their shlibs)
{ printf 'Source: nvme-csd\nMaintainer: %s\n' "$maintainer"
  for pkg in libcsd0 libcsd-dev csdctl nvme-csd-qemu csd-dkms; do
      printf '\nPackage: %s\nArchitecture: %s\n' "$pkg" "$([ $pkg = csd-dkms ] && echo all || echo "$arch")"
  done; } > "$work/debian/control"
shlibdeps() {  # the Depends of package $1's ELF files (on other packages)
    local files
    mapfile -t files < <(find "$(tree "$1")" -type f -not -path '*/DEBIAN/*' -exec sh -c \
        'head -c4 "$1" | grep -q ELF && echo "$1"' _ {} \;)
    [ ${#files[@]} -gt 0 ] || return 0
    local deps
    deps=$(cd "$work" && dpkg-shlibdeps -O -x"$1" -l"debian/libcsd0/usr/lib/$multiarch" -S"debian/libcsd0" \
        "${files[@]/#$work\//}") || die "dpkg-shlibdeps failed for $1"
    sed -n 's/^shlibs:Depends=//p' <<<"$deps"
}
# (before the control files: a failure stops the build)
libcsd0_deps=$(shlibdeps libcsd0)
csdctl_deps=$(shlibdeps csdctl)
qemu_deps=$(shlibdeps nvme-csd-qemu)
control() {  # package, architecture, Depends, Description (summary line, then more)
    local t; t=$(tree "$1")
    { echo "Package: $1"
      echo "Version: $debver"
      echo "Architecture: $2"
      echo "Maintainer: $maintainer"
      echo "Installed-Size: $(du -sk --exclude=DEBIAN "$t" | cut -f1)"
      [ -z "$3" ] || echo "Depends: $3"
      echo "Section: $5"
      echo "Priority: optional"
      echo "Description: $4"
    } > "$t/DEBIAN/control"
}
control libcsd0 "$arch" "$libcsd0_deps" "nvme-csd: drive computational-storage NVMe devices (library)
 libcsd talks to a computational-storage NVMe drive: the emulated one in QEMU, a real one,
 csd.ko's tenants or its in-process device (emu:FILE). C and C++17 API; libcsd-snia, the
 SNIA Computational Storage API over it." libs
control libcsd-dev "$arch" "libcsd0 (= $debver)" "nvme-csd: drive computational-storage NVMe devices (development files)
 Headers (include/nvme-csd: csd.h, csd/*.hpp, the command set's wire format and the SNIA
 Computational Storage API's cs.h), libcsd.so, libcsd-snia.so and pkg-config's csd.pc
 and csd-snia.pc." libdevel
control csdctl "$arch" "$csdctl_deps" "nvme-csd: command line for computational-storage NVMe devices
 csdctl: device facts, an object store, programs run in the drive, your own eBPF
 programs, a benchmark; --json output. With a man page and bash completion." admin
control nvme-csd-qemu "$arch" "$qemu_deps, qemu-system-data, seabios, ipxe-qemu" \
    "nvme-csd: QEMU with the emulated computational-storage NVMe device
 QEMU $(strings "$qemu" | sed -n 's/^QEMU emulator version \([^ ]*\).*/\1/p' | head -1) (x86_64) with the nvme-csd device (nvme,csd=on), installed
 as /usr/bin/csd-qemu-system-x86_64 beside Debian's qemu-system-x86, which it leaves alone." otherosfs
control csd-dkms all "dkms, kmod" "nvme-csd: csd.ko, SLM partitions of a CSD for unprivileged tenants (DKMS)
 The source of csd.ko, built by DKMS for kernels of the $kseries series (it needs
 nvme-core's private header of that series, shipped with it)." kernel

rm -f "$out"/*.deb
for pkg in libcsd0 libcsd-dev csdctl nvme-csd-qemu csd-dkms; do
    a=$([ $pkg = csd-dkms ] && echo all || echo "$arch")
    dpkg-deb --root-owner-group -Zxz --build "$(tree $pkg)" "$out/${pkg}_${debver}_$a.deb" >/dev/null
    say "$out/${pkg}_${debver}_$a.deb ($(du -h "$out/${pkg}_${debver}_$a.deb" | cut -f1))"
done

# ---------------------------------------------------------------- the Python wheel
# The extension links this build's libcsd and carries it with libcsd-emu (python/setup.py,
# CSD_LIBDIR); kept while neither the libraries nor a Python source is newer.
wheel=$(ls -t "$out"/nvme_csd-"$version"-*.whl 2>/dev/null | head -1 || true)
if [ -z "$wheel" ] || [ -n "$(find "$top/python" "$mb/host" -maxdepth 3 -type f \
                               \( -name '*.py' -o -name '*.toml' -o -name '*.cc' -o -name 'libcsd*.so*' \) \
                               -newer "$wheel" -not -path '*/__pycache__/*' -print -quit)" ]; then
    say "Python wheel for $("$py" --version 2>&1)"
    rm -f "$out"/nvme_csd-*.whl
    rm -rf "$top/python/build"   # setuptools' in-tree build folder: no file of an earlier build in the wheel
    # pip from a virtual environment of that interpreter: Debian's python3 has no pip
    # (python3-pip is not among make deps' packages; python3-venv, whose venvs carry pip, is).
    wvenv="$out/wheel-venv"
    base_of() { "$1" -c 'import sys; print(sys.base_prefix, sys.version)' 2>/dev/null; }
    [ -x "$wvenv/bin/python" ] && [ "$(base_of "$wvenv/bin/python")" = "$(base_of "$py")" ] ||
        { rm -rf "$wvenv"; "$py" -m venv "$wvenv" || die "'$py -m venv' failed (python3-venv: make deps)"; }
    CSD_LIBDIR="$mb/host" NVME_CSD_NO_CUDA=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
        nice -n 10 "$wvenv/bin/python" -m pip wheel -q --no-deps -w "$out" "$top/python"
fi
say "$(ls "$out"/nvme_csd-*.whl)"
