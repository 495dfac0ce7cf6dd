#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds nvme-cli with the `nvme csd` plugin into build/nvme-cli/nvme: Debian's nvme-cli
# source of the version installed on this machine (the one images/build-guest.sh copies
# into the guest), fetched with apt, with Debian's own patches, then patches/ here and the
# plugin (csd-nvme.c, csd-nvme.h and the spec header spec/csd_spec.h) in plugins/csd/.
# The download is kept in $CSD_CACHE/dl, the build in $CSD_CACHE/nvme-cli/VERSION; a change
# to the plugin recompiles only the plugin.
# Usage: host/nvme-cli-plugin/build.sh
# Environment: CSD_CACHE (default ~/.cache/nvme-csd), JOBS (default nproc).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${CSD_CACHE:-$HOME/.cache/nvme-csd}
jobs=${JOBS:-$(nproc)}
dl="$cache/dl"
out="$top/build/nvme-cli"

say() { echo "build-nvme-cli: $*"; }
die() { echo "build-nvme-cli: error: $*" >&2; exit 1; }

version=$(dpkg-query -W -f '${Version}' nvme-cli 2>/dev/null) ||
    die "nvme-cli is not installed: run 'make deps' (the guest ships this machine's nvme-cli)"
for p in meson ninja pkg-config; do
    command -v "$p" >/dev/null || die "$p missing: run 'make deps'"
done
for pc in libnvme libnvme-mi json-c zlib; do
    pkg-config --exists "$pc" || die "$pc development files missing: run 'make deps'"
done
work="$cache/nvme-cli/$version"
dsc="nvme-cli_${version#*:}.dsc"
mkdir -p "$dl" "$work" "$out"

# ---------------------------------------------------------------- fetch source
if [ ! -f "$dl/$dsc" ]; then
    if ! apt-cache showsrc nvme-cli 2>/dev/null | grep -qxF "Version: $version"; then
        [ "$(id -u)" = 0 ] || die "apt offers no nvme-cli $version source: run 'sudo ci/apt-sources.sh && sudo apt-get update'"
        "$top/ci/apt-sources.sh" >&2   # adds the bookworm deb-src entry
        apt-get update -qq >&2
    fi
    say "fetching nvme-cli source $version with apt"
    (cd "$dl" && apt-get source --download-only -qq "nvme-cli=$version") ||
        die "apt-get source nvme-cli=$version failed"
fi
# The files the .dsc lists, checked against its SHA-256 sums (ci/dsc-files.sh).
. "$top/ci/dsc-files.sh"
dsc_files "$dl" "$dsc" nvme-cli > /dev/null  # sets dsc_orig, dsc_debian

# ---------------------------------------------------------------- staged tree
# The tree is unpacked and patched again only when the source or a patch changes; the
# plugin's files are copied over when they differ, so that ninja rebuilds only them.
base_hash=$(
    {
        echo "$version"
        sha256sum "$0"
        find "$here/patches" -type f -print0 | sort -z | xargs -0r sha256sum
        # what meson finds on the machine (compiler, libraries) configures the build too
        ${CC:-cc} --version 2>&1 | head -n 1
        dpkg-query -W -f '${Package} ${Version}\n' libnvme-dev libjson-c-dev zlib1g-dev meson 2>/dev/null
    } | sed "s|$top/||g" | sha256sum | cut -c1-16
)
src="$work/src"
bld="$work/build"
if [ "$(cat "$work/base-stamp" 2>/dev/null)" != "$base_hash" ] || [ ! -f "$bld/build.ninja" ]; then
    say "unpacking $dsc_orig"
    rm -rf "$src" "$bld" "$work/base-stamp"
    dsc_unpack "$src" "$dl"  # with Debian's patches, as dpkg-source applies them
    for p in "$here"/patches/*.patch; do
        patch -d "$src" -p1 -N -s --dry-run < "$p" >/dev/null ||
            die "$(basename "$p") does not apply to nvme-cli $version"
        patch -d "$src" -p1 -N -s < "$p"
        say "applied $(basename "$p")"
    done
    mkdir -p "$src/plugins/csd"
    cp "$here/csd-nvme.c" "$here/csd-nvme.h" "$top/spec/csd_spec.h" "$src/plugins/csd/"
    (cd "$src" && meson setup "$bld" --buildtype=release -Dversion-tag="$version+nvme-csd" >/dev/null) ||
        die "meson setup failed (see $bld/meson-logs/meson-log.txt)"
    echo "$base_hash" > "$work/base-stamp"
fi
for f in "$here/csd-nvme.c" "$here/csd-nvme.h" "$top/spec/csd_spec.h"; do
    cmp -s "$f" "$src/plugins/csd/$(basename "$f")" || cp "$f" "$src/plugins/csd/"
done
nice -n 10 ninja -C "$bld" -j "$jobs" nvme > "$work/ninja.log" 2>&1 || {
    tail -n 40 "$work/ninja.log" >&2
    die "building nvme failed (log: $work/ninja.log)"
}
grep -E 'warning:' "$work/ninja.log" | grep 'plugins/csd' >&2 || true
cmp -s "$bld/nvme" "$out/nvme" || cp "$bld/nvme" "$out/nvme"
say "$out/nvme: $("$out/nvme" version | head -n 1), plugin: $("$out/nvme" csd version 2>&1 | head -n 1)"
