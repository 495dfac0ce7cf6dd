#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Adds the apt entries nvme-csd needs (bookworm-backports binaries; trixie sources for QEMU,
# bookworm sources for the nvme-cli the guest ships, host/nvme-cli-plugin/build.sh)
# by copying the archive URI and keyring of the machine's own Debian bookworm entry;
# idempotent. Reads either sources format: deb822 stanzas (/etc/apt/sources.list.d/*.sources,
# as a Debian 12 cloud image has) or one-line entries (/etc/apt/sources.list and
# /etc/apt/sources.list.d/*.list, as the Debian installer writes).
# Usage: ci/apt-sources.sh [--print]   (--print: show the entries, write nothing)
set -euo pipefail

out=/etc/apt/sources.list.d/nvme-csd.sources
etc=${CSD_APT_ETC:-/etc/apt}   # tests point this at a copy

# deb822: the first stanza of type deb whose Suites names bookworm (the main archive, not
# security): prints "URI SIGNED-BY".
from_deb822() {
    awk '
        function flush() { if (main && deb && u != "") { print u, s; found = 1; exit } u = ""; s = ""; main = 0; deb = 0 }
        /^[ \t]*#/    { next }
        /^Types:/     { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
        /^URIs:/      { u = $2 }
        /^Signed-By:/ { s = $2 }
        /^Suites:/    { for (i = 2; i <= NF; i++) if ($i == "bookworm") main = 1 }
        /^[ \t]*$/    { flush() }
        END           { if (!found) flush() }
    ' "$@" 2>/dev/null
}

# One-line: "deb [options] URI bookworm components...": prints "URI SIGNED-BY" (the
# signed-by= option if there is one, else nothing: apt then trusts its default keyrings).
from_one_line() {
    awk '
        /^[ \t]*#/ { next }
        $1 == "deb" {
            i = 2; s = ""
            if ($2 ~ /^\[/) {
                for (; i <= NF; i++) {
                    o = $i; gsub(/[\[\]]/, "", o)
                    if (o ~ /^signed-by=/) { sub(/^signed-by=/, "", o); s = o }
                    if ($i ~ /\]$/) { i++; break }
                }
            }
            if ($(i + 1) == "bookworm") { print $i, s; exit }
        }
    ' "$@" 2>/dev/null
}

shopt -s nullglob
read -r uris signed < <(from_deb822 "$etc"/sources.list.d/*.sources) || true
if [ -z "${uris:-}" ]; then
    read -r uris signed < <(from_one_line "$etc"/sources.list "$etc"/sources.list.d/*.list) || true
fi
if [ -z "${uris:-}" ]; then
    echo "apt-sources: no 'bookworm' entry found in $etc/sources.list or $etc/sources.list.d/;" \
         "add bookworm-backports and trixie and bookworm deb-src entries by hand" >&2
    exit 1
fi
# One deb822 stanza: TYPE SUITE (with the keyring line only when the source names one).
stanza() {
    printf 'Types: %s\nURIs: %s\nSuites: %s\nComponents: main\n' "$1" "$uris" "$2"
    [ -z "${signed:-}" ] || printf 'Signed-By: %s\n' "$signed"
}
want=$(echo "# Written by nvme-csd ci/apt-sources.sh from this machine's bookworm entry; safe to delete."
       stanza deb bookworm-backports; echo; stanza deb-src trixie; echo; stanza deb-src bookworm)

if [ "${1:-}" = "--print" ]; then
    printf '%s\n' "$want"
    exit 0
fi
if [ -f "$out" ] && [ "$(cat "$out")" = "$want" ]; then
    exit 0
fi
printf '%s\n' "$want" > "$out"
# Keep trixie binaries out of reach: only its sources are wanted (and bookworm's, whose
# binaries the machine's own entry already gives).
apt-get update -qq
