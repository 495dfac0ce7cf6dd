#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 40 item 3, before and after in one run: bench/submit_bench built against another
# commit's device core (BEFORE, e.g. f53cc0e: a media Execute planned on csd_core_submit's
# thread, no bound on the Executes that wait) and against this tree's, the same source and
# compiler flags for both, run alternately on each case.
#
# Usage: bench/submit-before-after.sh BEFORE_COMMIT [ROUNDS]
#   The before tree is a git worktree of BEFORE_COMMIT (in $CSD_BEFORE_TREE, default
#   /tmp/nvme-csd-before-COMMIT, made if absent) where only the core library is built; this
#   tree's core comes from build/meson (make build). Needs about 8 GiB of free memory (the
#   before core's plans at a 1 GiB SLM; the bench stops submitting at 6 GiB more RSS).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BEFORE_COMMIT [ROUNDS]" >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
commit=$1 rounds=${2:-1}
before=${CSD_BEFORE_TREE:-/tmp/nvme-csd-before-$commit}
work=$(mktemp -d /tmp/submit-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# core library of a tree: its path (the core moved from qemu-device/core/ to core/)
core_of() {  # core_of TREE -> prints the core's folder relative to the tree
    if [ -d "$1/core/include" ]; then echo core; else echo qemu-device/core; fi
}
build_core() {  # build_core TREE: the core library alone
    local t=$1 c
    c=$(core_of "$t")
    [ -f "$t/build/meson/build.ninja" ] || meson setup "$t/build/meson" "$t" --buildtype=release >/dev/null
    ninja -C "$t/build/meson" "$c/libcsd_core.a" >/dev/null
}
compile() {  # compile TREE OUT: this tree's submit_bench.cc against TREE's core
    local t=$1 c
    c=$(core_of "$t")
    g++ -std=c++17 -O2 -o "$2" "$top/bench/submit_bench.cc" -I"$t/$c/include" -I"$t/spec" \
        "$t/build/meson/$c/libcsd_core.a" $(cat "$t/build/meson/$c/csd_core_link_libs.txt") -lpthread
}

if [ ! -d "$before" ]; then
    git -C "$top" worktree add --detach "$before" "$commit" >/dev/null
fi
build_core "$before"
build_core "$top"
compile "$before" "$work/before"
compile "$top" "$work/after"
echo "before: $commit ($(git -C "$before" log -1 --format=%cs)); after: $(git -C "$top" rev-parse --short HEAD)$(git -C "$top" diff --quiet HEAD -- core || echo '+changes')"
echo "$(nproc) cores, $(awk '/MemAvailable/ {printf "%.1f", $2 / 1048576}' /proc/meminfo) GiB available, load $(cut -d' ' -f1 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
    for c in "gather 64M 9" "emb 64M 9" "gather 1G 3" "emb 1G 3" "gather 64M 0" "emb 64M 0"; do
        for side in before after; do
            printf '%-6s ' "$side"
            # shellcheck disable=SC2086
            "$work/$side" $c
        done
    done
done
