#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Adds the apt entries nvme-csd needs (bookworm-backports binaries; trixie sources for QEMU,
# bookworm sources for the nvme-cli the guest ships, host/nvme-cli-plugin/build.sh)
# by copying the archive URI and keyring of the machine's own Debian bookworm entry;
# idempotent. Reads either sources format: deb822 stanzas (/etc/apt/sources.list.d/*.sources,
# as a Debian 12 cloud image has) or one-line entries (/etc/apt/sources.list and
# /etc/apt/sources.list.d/*.list, as the Debian installer writes). Debian's entry is one of
# type deb for suite bookworm with component main (a third party's, Docker's 'bookworm
# stable' say, is not taken), preferably signed by debian-archive-keyring (or by apt's
# default keyrings, which hold it) rather than by another key.
# Usage: ci/apt-sources.sh [--print | --check | --archive]
#   --print    show the entries, write nothing
#   --check    exit 0 if the entries are in place, else say so and exit 1; write nothing
#   --archive  print the archive's URI as a program other than apt fetches from it
#              (debootstrap): a mirror list (mirror+file:, mirror+http:) resolved to its
#              first mirror
set -euo pipefail

etc=${CSD_APT_ETC:-/etc/apt}   # tests point this at a copy
out=$etc/sources.list.d/nvme-csd.sources

# The rank of an entry by its keyring (the lowest wins): 0 Debian's archive keyring, 1 apt's
# default keyrings (no Signed-By), 2 any other key.
rank_awk='function rank(s) { return s ~ /debian-archive-keyring/ ? 0 : (s == "" ? 1 : 2) }'

# deb822: every enabled stanza of type deb whose Suites names bookworm and Components main:
# prints "RANK URI SIGNED-BY" for each.
from_deb822() {
    awk "$rank_awk"'
        function flush() { if (deb && suite && main && enabled && u != "") print rank(s), u, s
                           u = ""; s = ""; deb = 0; suite = 0; main = 0; enabled = 1 }
        BEGIN         { enabled = 1 }
        FNR == 1      { flush() }
        /^[ \t]*#/    { next }
        /^Types:/     { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
        /^URIs:/      { u = $2 }
        /^Signed-By:/ { s = $2 }
        /^Suites:/    { for (i = 2; i <= NF; i++) if ($i == "bookworm") suite = 1 }
        /^Components:/ { for (i = 2; i <= NF; i++) if ($i == "main") main = 1 }
        /^Enabled:/   { enabled = ($2 != "no") }
        /^[ \t]*$/    { flush() }
        END           { flush() }
    ' "$@" 2>/dev/null
}

# One-line: "deb [options] URI bookworm components..." with main among the components:
# prints "RANK URI SIGNED-BY" for each (SIGNED-BY: the signed-by= option if there is one,
# else nothing: apt then trusts its default keyrings).
from_one_line() {
    awk "$rank_awk"'
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
            if ($(i + 1) != "bookworm") next
            for (c = i + 2; c <= NF; c++) if ($c == "main") { print rank(s), $i, s; next }
        }
    ' "$@" 2>/dev/null
}

shopt -s nullglob
# Both formats' entries, deb822 first; the best ranked, the first of its rank.
read -r _ uris signed < <({ from_deb822 "$etc"/sources.list.d/*.sources
                            from_one_line "$etc"/sources.list "$etc"/sources.list.d/*.list; } |
                          sort -s -n -k1,1 | head -n 1) || true
if [ -z "${uris:-}" ]; then
    echo "apt-sources: no Debian 'bookworm main' entry found in $etc/sources.list or $etc/sources.list.d/;" \
         "add bookworm-backports and trixie and bookworm deb-src entries by hand" >&2
    exit 1
fi

if [ "${1:-}" = "--archive" ]; then
    # apt's mirror method: the URI names a list of mirrors, one a line (a URI, then
    # optional tab-separated metadata); the first one is taken.
    fetch() { python3 -c 'import sys, urllib.request
sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=30).read().decode())' "$1"; }
    case "$uris" in
        mirror+file:*) list=$(cat "${uris#mirror+file:}") ||
                           { echo "apt-sources: cannot read the mirror list of $uris" >&2; exit 1; } ;;
        mirror+http://* | mirror+https://*) list=$(fetch "${uris#mirror+}") ||
                           { echo "apt-sources: cannot fetch the mirror list of $uris" >&2; exit 1; } ;;
        mirror://*) list=$(fetch "http://${uris#mirror://}") ||
                           { echo "apt-sources: cannot fetch the mirror list of $uris" >&2; exit 1; } ;;
        *) list=$uris ;;
    esac
    first=$(printf '%s\n' "$list" | awk '/^[ \t]*(#|$)/ { next } { print $1; exit }')
    [ -n "$first" ] || { echo "apt-sources: the mirror list of $uris names no mirror" >&2; exit 1; }
    printf '%s\n' "$first"
    exit 0
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
if [ "${1:-}" = "--check" ]; then
    echo "apt-sources: $out is missing or out of date (bookworm-backports, trixie and bookworm deb-src entries)" >&2
    exit 1
fi
printf '%s\n' "$want" > "$out"
# Keep trixie binaries out of reach: only its sources are wanted (and bookworm's, whose
# binaries the machine's own entry already gives).
apt-get update -qq
