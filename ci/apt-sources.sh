#!/usr/bin/env bash
# Adds the apt entries nvme-csd needs (bookworm-backports binaries, trixie sources)
# by copying the URIs and Signed-By of the machine's own Debian entry; idempotent.
set -euo pipefail

src=/etc/apt/sources.list.d/debian.sources
out=/etc/apt/sources.list.d/nvme-csd.sources

if [ ! -r "$src" ]; then
    echo "apt-sources: $src not found; add bookworm-backports and a trixie deb-src entry by hand" >&2
    exit 1
fi

# First stanza whose Suites line names bookworm (the main archive, not security).
read -r uris signed < <(awk '
    /^URIs:/      { u = $2 }
    /^Signed-By:/ { s = $2 }
    /^Suites:/    { main = ($2 == "bookworm") }
    /^$/          { if (main && u != "") { print u, s; exit } u = ""; s = ""; main = 0 }
    END           { if (main && u != "") print u, s }
' "$src")

if [ -z "${uris:-}" ]; then
    echo "apt-sources: no bookworm entry with URIs in $src" >&2
    exit 1
fi

want=$(cat <<STANZAS
# Written by nvme-csd ci/apt-sources.sh from $src; safe to delete.
Types: deb
URIs: $uris
Suites: bookworm-backports
Components: main
Signed-By: $signed

Types: deb-src
URIs: $uris
Suites: trixie
Components: main
Signed-By: $signed
STANZAS
)

if [ -f "$out" ] && [ "$(cat "$out")" = "$want" ]; then
    exit 0
fi
printf '%s\n' "$want" > "$out"
# Keep trixie binaries out of reach: only its sources are wanted.
apt-get update -qq
