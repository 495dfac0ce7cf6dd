#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the fio engine for nvme-csd drives, build/fio/csd-fio.so ('ioengine=external:' it,
# docs/fio.md), against the headers of Debian's fio source of the version installed on this
# machine (the fio the guest image copies): fetched with apt, Debian's patches applied and
# configured as Debian configures it (less gfio and libnbd, whose engines it does not build),
# so that the structures the engine shares with fio are fio's own. The engine links libcsd
# of the meson build (make build).
# The download is kept in $CSD_CACHE/dl, the configured tree in $CSD_CACHE/fio/VERSION.
# Usage: host/fio-engine/build.sh   Environment: CSD_CACHE (default ~/.cache/nvme-csd), CC.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${CSD_CACHE:-$HOME/.cache/nvme-csd}
dl="$cache/dl"
mb="$top/build/meson"
out="$top/build/fio"

say() { echo "build-fio-engine: $*"; }
die() { echo "build-fio-engine: error: $*" >&2; exit 1; }

version=$(dpkg-query -W -f '${Version}' fio 2>/dev/null) ||
    die "fio is not installed: run 'make deps' (the guest ships this machine's fio)"
[ -f "$mb/host/libcsd.so" ] || die "$mb/host/libcsd.so missing: run 'make build'"
work="$cache/fio/$version"
dsc="fio_${version#*:}.dsc"
mkdir -p "$dl" "$work" "$out"

# ---------------------------------------------------------------- fetch source
if [ ! -f "$dl/$dsc" ]; then
    if ! apt-cache showsrc fio 2>/dev/null | grep -qxF "Version: $version"; then
        [ "$(id -u)" = 0 ] || die "apt offers no fio $version source: run 'sudo ci/apt-sources.sh && sudo apt-get update'"
        "$top/ci/apt-sources.sh" >&2   # adds the bookworm deb-src entry
        apt-get update -qq >&2
    fi
    say "fetching fio source $version with apt"
    (cd "$dl" && apt-get source --download-only -qq "fio=$version") || die "apt-get source fio=$version failed"
fi
# The files the .dsc lists, checked against its SHA-256 sums (ci/dsc-files.sh).
. "$top/ci/dsc-files.sh"
dsc_files "$dl" "$dsc" fio > /dev/null  # sets dsc_orig, dsc_debian

# ---------------------------------------------------------------- configured tree
# Unpacked, patched and configured again only when the source, this script or the
# machine's compiler changes (configure's answers depend on them).
stamp=$({ echo "$version"; sha256sum "$0" | cut -d' ' -f1; ${CC:-cc} --version 2>&1 | head -n 1; } | sha256sum | cut -c1-16)
src="$work/src"
if [ "$(cat "$work/stamp" 2>/dev/null)" != "$stamp" ] || [ ! -f "$src/config-host.h" ]; then
    say "unpacking $dsc_orig"
    rm -rf "$src" "$work/stamp"
    dsc_unpack "$src" "$dl"
    # Debian: ./configure --disable-native --prefix=/usr --enable-gfio --enable-libnbd
    (cd "$src" && ./configure --disable-native --prefix=/usr > "$work/configure.log" 2>&1) ||
        die "fio's configure failed (log: $work/configure.log)"
    echo "$stamp" > "$work/stamp"
fi

# ---------------------------------------------------------------- the engine
# fio's own flags for its objects (Makefile: CPPFLAGS, FIO_CFLAGS), then the project's.
${CC:-cc} -std=gnu99 -O2 -g -fPIC -shared -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
    -Wno-missing-field-initializers -D_GNU_SOURCE -D_LARGEFILE_SOURCE -D_FILE_OFFSET_BITS=64 -DFIO_INTERNAL \
    -include "$src/config-host.h" -I"$src" -I"$top/host/include" -I"$top/spec" \
    "$here/csd-fio.c" -o "$out/csd-fio.so.tmp" -L"$mb/host" -lcsd -lpthread -lm \
    -Wl,-rpath,'$ORIGIN/../meson/host' 2> "$out/build.log" || {
    cat "$out/build.log" >&2
    die "compiling the engine failed"
}
if [ -s "$out/build.log" ]; then cat "$out/build.log" >&2; fi
mv "$out/csd-fio.so.tmp" "$out/csd-fio.so"
say "$out/csd-fio.so (fio $version)"
