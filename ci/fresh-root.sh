#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs COMMAND (default: 'make demo && make test') in a clean clone of this repository
# inside a fresh Debian 12 root made by debootstrap from this machine's own apt archive
# holding only what the README's Requirements install first (git and make): no project
# package installed, nothing of this machine's interpreters or libraries in reach. It
# proves the README's commands on a new machine (tests/fresh/readme-first-ten-minutes.sh
# runs the README's own words the same way). What is expensive and keyed on its inputs is
# shared with the machine through bind mounts: the project's
# cache (~/.cache/nvme-csd: QEMU builds, kernels), pip's and ccache's caches and apt's
# downloaded packages. The root is made anew on every run (ROOT, default
# /var/tmp/nvme-csd-fresh) and removed at the end.
# CSD_CI_COLD=1 builds everything from nothing: the project's build caches (QEMU builds,
# nvme-cli, ccache) start empty; only downloads (source packages, kernels, .debs, pip
# wheels) are shared, so the run measures a cold build without fetching again.
# Usage: [CSD_CI_COLD=1] ci/fresh-root.sh [COMMAND]   (as root)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-make demo && make test}
root=${ROOT:-/var/tmp/nvme-csd-fresh}
say() { echo "fresh-root: $*"; }

. "$top/ci/root-lib.sh"
trap root_cleanup EXIT
root_cleanup

start=$(date +%s)
root_make ""   # a minimal Debian 12; the README's first packages come below
if [ "${CSD_CI_COLD:-0}" = 1 ]; then
    root_mount pip
    root_mount_project_cache dl kernel
    say "cold: empty build caches (QEMU, nvme-cli, ccache); downloads shared"
else
    root_mount nvme-csd pip ccache
fi
root_install_first "$(git -C "$top" rev-parse HEAD)" > "$root.apt.log" 2>&1 ||
    { tail -n 20 "$root.apt.log" >&2; say "the README's first packages did not install"; exit 1; }
rm -f "$root.apt.log"
root_clone "$(git -C "$top" rev-parse HEAD)"

say "running '$cmd' in a clean clone at $(git -C "$top" rev-parse --short HEAD)"
set +e
root_run "cd /root/nvme-csd && $cmd" CCACHE_DIR=/root/.cache/ccache
rc=$?
set -e
say "'$cmd' exited $rc after $(( $(date +%s) - start )) s in all"
exit $rc
