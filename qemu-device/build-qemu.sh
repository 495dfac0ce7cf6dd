#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fetches QEMU 10.0 source with apt, applies nvme-csd's overlay and patch series, and
# builds build/qemu/qemu-system-x86_64 (plus the nvme qtests), cached on a hash of inputs.
#
# Usage: qemu-device/build-qemu.sh [--core-lib PATH] [--qtest]
#   --core-lib PATH  static device-core library to link into QEMU (libcsd_core.a)
#   --core-libs FILE file naming the libraries the core needs (-lopenblas ...), from meson
#   --qtest          also build the qtests (qos-test, csd-test) and copy them to build/qemu/
#   --fuzz           instead build QEMU's libFuzzer binary (qemu-fuzz-x86_64, clang, ASan and
#                    UBSan, generic-fuzz target; q35 and nvme only, no TCG) into
#                    build/qemu-fuzz/, in its own cache tree
# The project's QEMU has only the devices it uses (overlay configs/devices/x86_64-softmmu/csd.mak);
# compiles go through ccache ($CSD_CACHE/ccache) when it is installed.
# Environment: CSD_CACHE (default ~/.cache/nvme-csd), JOBS (default nproc).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source=qemu-source.conf
. "$here/qemu-source.conf"

core_lib=""
core_libs=""
want_qtest=0
want_fuzz=0
while [ $# -gt 0 ]; do
    case "$1" in
        --core-lib) core_lib=$(realpath "$2"); shift 2 ;;
        --core-libs) core_libs=$(cat "$2"); shift 2 ;;
        --qtest) want_qtest=1; shift ;;
        --fuzz) want_fuzz=1; shift ;;
        *) echo "build-qemu: unknown argument '$1'" >&2; exit 2 ;;
    esac
done

cache=${CSD_CACHE:-$HOME/.cache/nvme-csd}
jobs=${JOBS:-$(nproc)}
out="$top/build/qemu"
dl="$cache/dl"
work="$cache/qemu"
if [ "$want_fuzz" = 1 ]; then
    [ "$want_qtest" = 0 ] || { echo "build-qemu: --fuzz and --qtest are separate builds" >&2; exit 2; }
    out="$top/build/qemu-fuzz"
    work="$cache/qemu-fuzz"
fi
mkdir -p "$dl" "$work" "$out"

say() { echo "build-qemu: $*"; }
die() { echo "build-qemu: error: $*" >&2; exit 1; }

# ---------------------------------------------------------------- fetch source
# Echoes the Debian version to use: the pinned one if apt offers it, else the newest
# of the same upstream series.
pick_version() {
    local offered
    offered=$(apt-cache showsrc qemu 2>/dev/null | awk '/^Version:/ {print $2}' | sort -u)
    if ! printf '%s\n' "$offered" | grep -q "^1:${QEMU_UPSTREAM_SERIES}\."; then
        "$top/ci/apt-sources.sh" >&2 && apt-get update -qq >&2 || true   # adds the trixie deb-src entry
        offered=$(apt-cache showsrc qemu 2>/dev/null | awk '/^Version:/ {print $2}' | sort -u)
    fi
    if printf '%s\n' "$offered" | grep -qxF "$QEMU_DEB_VERSION"; then
        echo "$QEMU_DEB_VERSION"
        return
    fi
    local series_re="^1:${QEMU_UPSTREAM_SERIES//./\\.}\\."
    local best
    best=$(printf '%s\n' "$offered" | grep -E "$series_re" | sort -V | tail -n 1 || true)
    if [ -z "$best" ]; then
        die "apt offers no QEMU $QEMU_UPSTREAM_SERIES.x source (offered: $(echo $offered)).
  Run 'make deps' (it adds the trixie deb-src entry) or check the apt sources."
    fi
    echo "build-qemu: warning: pinned QEMU $QEMU_DEB_VERSION is gone from the archive; using $best" >&2
    echo "$best"
}

deb_version=$(pick_version)
upstream=${deb_version#*:}          # 10.0.13+ds-0+deb13u1
upstream=${upstream%%-*}            # 10.0.13+ds
tarball="qemu_${upstream}.orig.tar.xz"
dsc="qemu_${deb_version#*:}.dsc"

if [ ! -f "$dl/$tarball" ] || [ ! -f "$dl/$dsc" ]; then
    say "fetching QEMU source $deb_version with apt"
    (cd "$dl" && apt-get source --download-only -qq "qemu=$deb_version") ||
        die "apt-get source qemu=$deb_version failed"
fi

# Verify the tarball against the pinned checksum, or the .dsc's for a fallback version.
if [ "$deb_version" = "$QEMU_DEB_VERSION" ]; then
    want_sha=$QEMU_ORIG_SHA256
else
    want_sha=$(awk -v f="$tarball" '/^Checksums-Sha256:/ {on=1; next} /^[^ ]/ {on=0} on && $3 == f {print $1}' "$dl/$dsc")
fi
have_sha=$(sha256sum "$dl/$tarball" | cut -d' ' -f1)
[ -n "$want_sha" ] && [ "$have_sha" = "$want_sha" ] ||
    die "checksum mismatch for $tarball: have $have_sha, want ${want_sha:-unknown}; delete $dl and retry"

# ---------------------------------------------------------------- input hash
# Only the devices the project uses (configs/devices/x86_64-softmmu/csd*.mak in the overlay;
# the README lists them): the ordinary build keeps what the guest tests, make vm and
# QEMU's own nvme qos-tests need; the fuzzer keeps q35 and nvme, and needs no TCG (qtest drives it).
configure_flags="$QEMU_CONFIGURE_FLAGS --python=/usr/bin/python3 --without-default-devices"
if [ "$want_fuzz" = 0 ]; then
    configure_flags="$configure_flags --with-devices-x86_64=csd"
else
    configure_flags="${configure_flags/--enable-tcg/--disable-tcg} --with-devices-x86_64=csd-fuzz"
    configure_flags="$configure_flags --enable-fuzzing --enable-asan --enable-ubsan"
fi
cc=cc cxx=c++
[ "$want_fuzz" = 0 ] || { cc=clang; cxx=clang++; }
# ccache (keyed on the preprocessed source, the flags and the compiler) makes a build folder
# that has to be configured anew (another machine's packages, new flags) cost little.
if command -v ccache >/dev/null; then cc="ccache $cc"; cxx="ccache $cxx"; fi
# The core and the libraries it needs reach the linker through a linker script at a fixed
# path (GROUP(...)), so that neither a new core nor a new library list changes QEMU's
# configuration: either costs a relink, never a rebuild.
if [ -n "$core_lib" ]; then
    [ -f "$core_lib" ] || die "core library $core_lib not found"
    [ -n "$core_libs" ] || die "--core-libs FILE must name the core's libraries"
    configure_flags="$configure_flags --extra-ldflags=$work/csd-core/csd-core.ld"
fi

# meson makes a thin archive (member paths only): flatten it into a self-contained copy,
# whose bytes (not the thin archive's, which change only with its member list) key the
# cache, so that any change to the core's code relinks QEMU.
flat_core=""
if [ -n "$core_lib" ]; then
    mkdir -p "$work/csd-core"
    flat_core="$work/csd-core/new.a"
    rm -f "$flat_core"
    printf 'CREATE %s\nADDLIB %s\nSAVE\nEND\n' "$flat_core" "$core_lib" | ar -M
fi

# What QEMU's configure finds on the machine besides its flags: it probes for headers and
# libraries and uses what is there (valgrind/valgrind.h, say). A build configured on a
# machine with other packages must not be reused, so the installed packages and the
# compiler key the cache and the configure step too.
build_env=$( { ${CC:-cc} --version 2>&1 | head -n 1; command -v clang >/dev/null && clang --version | head -n 1
               dpkg-query -W -f '${Package} ${Version}\n' 2>/dev/null | sort; } | sha256sum | cut -c1-16)

input_hash=$(
    {
        echo "$deb_version $have_sha $want_qtest $build_env"
        echo "$configure_flags $cc $cxx $core_libs"
        sha256sum "$0" "$here/qemu-source.conf"
        find "$here/patches" "$here/overlay" "$top/core/include" "$top/spec" -type f -print0 2>/dev/null | sort -z | xargs -0r sha256sum
        [ -z "$flat_core" ] || sha256sum < "$flat_core"
    } | sed "s|$top/||g" | sha256sum | cut -c1-16
)

stamp="$work/stamp"
products=(qemu-system-x86_64)
[ "$want_qtest" = 0 ] || products+=(qos-test csd-test)
[ "$want_fuzz" = 0 ] || products=(qemu-fuzz-x86_64)

copy_products() {
    local p
    for p in "${products[@]}"; do
        local from="$work/build/$p"
        case "$p" in qemu-*) ;; *) from="$work/build/tests/qtest/$p" ;; esac
        cmp -s "$from" "$out/$p" 2>/dev/null || cp "$from" "$out/$p"
    done
    # Firmware (the +ds source ships none), where QEMU looks relative to its binary
    # (build/qemu/../share/qemu): qboot and option ROMs for the guest, SeaBIOS for qtests.
    local fw="$top/build/share/qemu" f
    mkdir -p "$fw"
    for f in /usr/share/qemu/qboot.rom /usr/share/qemu/linuxboot_dma.bin \
             /usr/share/qemu/kvmvapic.bin /usr/share/seabios/bios-256k.bin \
             /usr/share/seabios/vgabios-stdvga.bin /usr/lib/ipxe/qemu/efi-e1000.rom; do
        [ -f "$f" ] || die "$f missing: run 'make deps' (qemu-system-data, seabios, ipxe-qemu)"
        cmp -s "$f" "$fw/$(basename "$f")" || cp "$f" "$fw/"
    done
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$input_hash" ]; then
    ok=1
    for p in "${products[@]}"; do
        b="$work/build/$p"; case "$p" in qemu-*) ;; *) b="$work/build/tests/qtest/$p" ;; esac
        [ -x "$b" ] || ok=0
    done
    if [ $ok = 1 ]; then
        copy_products
        [ -z "$flat_core" ] || rm -f "$flat_core"
        say "up to date (inputs $input_hash)"
        exit 0
    fi
fi

# ---------------------------------------------------------------- staged tree
# The build's source tree (the pristine source, the overlay, the patches, the headers the
# glue includes) is staged again only when one of those changed: a new core alone (the
# case a core change brings about) costs a relink, not a copy of QEMU's whole source tree
# and a checksum of every file in it (25-45 s of make test's qemu-fuzz on a loaded machine).
src_hash=$(
    {
        echo "$upstream $have_sha"
        sha256sum "$0"
        find "$here/patches" "$here/overlay" "$top/core/include" "$top/spec" -type f -print0 2>/dev/null | sort -z | xargs -0r sha256sum
    } | sed "s|$top/||g" | sha256sum | cut -c1-16
)
src_stamp="$work/src-stamp"
if [ -d "$work/src" ] && [ "$(cat "$src_stamp" 2>/dev/null)" = "$src_hash" ]; then
    say "source tree up to date (sources $src_hash): relinking only what changed"
else
rm -f "$src_stamp"
pristine="$work/pristine-$upstream"
if [ ! -d "$pristine" ]; then
    say "unpacking $tarball"
    rm -rf "$pristine.tmp" && mkdir -p "$pristine.tmp"
    tar -xf "$dl/$tarball" -C "$pristine.tmp" --strip-components=1
    mv "$pristine.tmp" "$pristine"
fi

stage="$work/stage"
rm -rf "$stage"
cp -a "$pristine" "$stage"
if [ -d "$here/overlay" ]; then
    cp -r "$here/overlay/." "$stage/"
fi
# The device core's C ABI and the wire format, next to the glue that includes them.
cp "$top"/core/include/*.h "$top"/spec/*.h "$stage/hw/nvme/"
for p in "$here"/patches/*.patch; do
    [ -e "$p" ] || continue
    if ! patch -d "$stage" -p1 -N -s --dry-run < "$p" >/dev/null 2>&1; then
        echo "build-qemu: error: patch $(basename "$p") does not apply to QEMU $upstream:" >&2
        patch -d "$stage" -p1 -N --dry-run < "$p" >&2 || true
        exit 1
    fi
    patch -d "$stage" -p1 -N -s < "$p"
    say "applied $(basename "$p")"
done
# meson insists on the EDK2 images that the +ds tarball leaves out; they are never used.
for f in edk2-aarch64-code edk2-arm-code edk2-arm-vars edk2-i386-code edk2-i386-secure-code \
         edk2-i386-vars edk2-x86_64-code edk2-x86_64-secure-code edk2-loongarch64-code \
         edk2-loongarch64-vars edk2-riscv-code edk2-riscv-vars; do
    [ -f "$stage/pc-bios/$f.fd.bz2" ] || bzip2 -c < /dev/null > "$stage/pc-bios/$f.fd.bz2"
done

# Copy only changed files into the build's source tree so ninja rebuilds only those.
mkdir -p "$work/src"
rsync -rlc --delete "$stage/" "$work/src/"
rm -rf "$stage"
echo "$src_hash" > "$src_stamp"
fi

if [ -n "$core_lib" ]; then
    script="GROUP ( $work/csd-core/libcsd_core.a $core_libs )"
    if ! cmp -s "$work/csd-core/new.a" "$work/csd-core/libcsd_core.a" ||
       [ "$(cat "$work/csd-core/csd-core.ld" 2>/dev/null)" != "$script" ]; then
        mv "$work/csd-core/new.a" "$work/csd-core/libcsd_core.a"
        echo "$script" > "$work/csd-core/csd-core.ld"
        rm -f "$work/build/qemu-system-x86_64" "$work/build/qemu-fuzz-x86_64"   # ninja cannot see link_args inputs
    fi
    rm -f "$work/csd-core/new.a"
fi

# ---------------------------------------------------------------- configure, build
export CCACHE_DIR="$cache/ccache"
flags_stamp="$work/build/.csd-configure-flags"
if [ ! -f "$work/build/build.ninja" ] || [ "$(cat "$flags_stamp" 2>/dev/null)" != "$configure_flags $cc $cxx $build_env" ]; then
    say "configuring QEMU $upstream"
    rm -rf "$work/build" && mkdir -p "$work/build"
    # shellcheck disable=SC2086
    (cd "$work/build" && ../src/configure $configure_flags --cc="$cc" --cxx="$cxx" > configure.log 2>&1) || {
        tail -n 40 "$work/build/configure.log" >&2
        die "QEMU configure failed (log: $work/build/configure.log)"
    }
    echo "$configure_flags $cc $cxx $build_env" > "$flags_stamp"
fi

targets=(qemu-system-x86_64)
[ "$want_qtest" = 0 ] || targets+=(tests/qtest/qos-test tests/qtest/csd-test)
[ "$want_fuzz" = 0 ] || targets=(qemu-fuzz-x86_64)
cold_minutes=3; [ "$want_fuzz" = 0 ] || cold_minutes=5   # measured: 180 s and 286 s
say "building ${targets[*]} with $jobs jobs (cold, 2 idle cores: about $cold_minutes minutes; through ccache: about 1)"
start=$(date +%s)
ninja -C "$work/build" -j "$jobs" "${targets[@]}" | awk '
    /^\[[0-9]+\/[0-9]+\]/ { n++; if (n % 200 == 0) { print "build-qemu: " $1; fflush() } next }
    { print; fflush() }'
[ "${PIPESTATUS[0]}" = 0 ] || die "QEMU build failed"
say "built in $(( $(date +%s) - start )) s"

echo "$input_hash" > "$stamp"
copy_products
say "done: $out/${products[0]}"
