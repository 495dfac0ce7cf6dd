#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs COMMAND (default: 'make demo && make test') in a clean clone of this repository
# inside a fresh Debian 12 root made by debootstrap from this machine's own apt archive:
# stock python3, no project package installed, nothing of this machine's interpreters or
# libraries in reach. It proves the README's commands on a new machine. What is expensive
# and keyed on its inputs is shared with the machine through bind mounts: the project's
# cache (~/.cache/nvme-csd: QEMU builds, kernels), pip's and ccache's caches and apt's
# downloaded packages. The root is made anew on every run (ROOT, default
# /var/tmp/nvme-csd-fresh) and removed at the end.
# Usage: ci/fresh-root.sh [COMMAND]   (as root)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-make demo && make test}
root=${ROOT:-/var/tmp/nvme-csd-fresh}
cache=${XDG_CACHE_HOME:-$HOME/.cache}
say() { echo "fresh-root: $*"; }

[ "$(id -u)" = 0 ] || { echo "fresh-root: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
command -v debootstrap >/dev/null || apt-get install -y -qq --no-install-recommends debootstrap >/dev/null

# The machine's bookworm archive, from either sources format (ci/apt-sources.sh's reader).
uri=$("$top/ci/apt-sources.sh" --print | awk '/^URIs:/ {print $2; exit}')
[ -n "$uri" ] || { echo "fresh-root: no bookworm archive found in this machine's apt sources" >&2; exit 1; }

unmount_all() {
    local m
    for m in $(awk -v r="$root" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/mounts | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
}
cleanup() { unmount_all; rm -rf --one-file-system "$root"; }
trap cleanup EXIT
cleanup

debs="$cache/nvme-csd-apt"   # downloaded .debs, shared by debootstrap and apt in the root
mkdir -p "$debs/archives/partial" "$cache/nvme-csd" "$cache/pip" "$cache/ccache"
start=$(date +%s)
say "debootstrap bookworm from $uri (a stock Debian 12: minbase + git make ca-certificates python3)"
debootstrap --variant=minbase --include=git,make,ca-certificates,python3 --cache-dir="$debs/archives" \
    bookworm "$root" "$uri" > "$root.debootstrap.log" 2>&1 || {
    tail -n 20 "$root.debootstrap.log" >&2; echo "fresh-root: debootstrap failed" >&2; exit 1; }
rm -f "$root.debootstrap.log"
say "root ready in $(( $(date +%s) - start )) s"

for d in proc sys dev dev/pts; do mount --bind "/$d" "$root/$d"; done
mkdir -p "$root/root/.cache/nvme-csd" "$root/root/.cache/pip" "$root/root/.cache/ccache"
mount --bind "$cache/nvme-csd" "$root/root/.cache/nvme-csd"
mount --bind "$cache/pip" "$root/root/.cache/pip"
mount --bind "$cache/ccache" "$root/root/.cache/ccache"
mount --bind "$debs/archives" "$root/var/cache/apt/archives"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# Certificate authorities this machine adds to Debian's (a proxy in front of PyPI, say)
# belong to the machine, not to the project: the new root trusts them too.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    chroot "$root" update-ca-certificates >/dev/null 2>&1 || true
fi
git clone -q "$top" "$root/root/nvme-csd"
git -C "$root/root/nvme-csd" checkout -q "$(git -C "$top" rev-parse HEAD)"

say "running '$cmd' in a clean clone at $(git -C "$top" rev-parse --short HEAD)"
set +e
env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    TERM=dumb DEBIAN_FRONTEND=noninteractive CCACHE_DIR=/root/.cache/ccache \
    chroot "$root" /bin/bash -c "cd /root/nvme-csd && $cmd"
rc=$?
set -e
say "'$cmd' exited $rc after $(( $(date +%s) - start )) s in all"
exit $rc
