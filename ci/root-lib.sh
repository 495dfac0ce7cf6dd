# SPDX-License-Identifier: MIT
# Sourced (bash) by ci/fresh-root.sh, tests/fresh/readme-first-ten-minutes.sh and
# tests/packages/test-packages.sh: a fresh Debian 12 root made by debootstrap from this
# machine's own apt archive, the machine's caches bound into it, what the README's
# Requirements install first and a clone of this repository made in it, a command run in it
# with a clean environment, and its removal.
# Set before sourcing: root (the root's folder), top (the repository). Needs root.

root_cache=${XDG_CACHE_HOME:-$HOME/.cache}
root_debs="$root_cache/nvme-csd-apt"   # downloaded .debs, shared by debootstrap and apt in the root

# Unmounts everything below $root, deepest first.
root_unmount_all() {
    local m
    for m in $(awk -v r="$root" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/mounts | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
}

# Unmounts and removes $root.
root_cleanup() { root_unmount_all; rm -rf --one-file-system "$root"; }

# debootstrap bookworm into $root: minbase plus the packages named (comma-separated; none
# when empty).
root_make() {
    local include=$1 uri start
    [ "$(id -u)" = 0 ] || { echo "root: needs root (debootstrap, chroot, mounts)" >&2; return 1; }
    command -v debootstrap >/dev/null || apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
    # The machine's bookworm archive, from either sources format (ci/apt-sources.sh's reader),
    # as debootstrap fetches from it: apt's mirror lists (a cloud image's mirror+file:) resolved.
    uri=$("$top/ci/apt-sources.sh" --archive)
    [ -n "$uri" ] || { echo "root: no bookworm archive found in this machine's apt sources" >&2; return 1; }
    mkdir -p "$root_debs/archives/partial"
    start=$(date +%s)
    echo "root: debootstrap bookworm from $uri (minbase${include:+ + $include})"
    debootstrap --variant=minbase ${include:+--include="$include"} --cache-dir="$root_debs/archives" \
        bookworm "$root" "$uri" > "$root.debootstrap.log" 2>&1 || {
        tail -n 20 "$root.debootstrap.log" >&2; echo "root: debootstrap failed" >&2; return 1; }
    rm -f "$root.debootstrap.log"
    echo "root: ready in $(( $(date +%s) - start )) s"
}

# Binds /proc, /sys, /dev, apt's package cache and the named cache folders of this
# machine (~/.cache/NAME) into $root, and gives it this machine's resolver and CAs.
root_mount() {
    local d c
    for d in proc sys dev dev/pts; do mount --bind "/$d" "$root/$d"; done
    for c in "$@"; do
        mkdir -p "$root_cache/$c" "$root/root/.cache/$c"
        mount --bind "$root_cache/$c" "$root/root/.cache/$c"
    done
    mount --bind "$root_debs/archives" "$root/var/cache/apt/archives"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    # Certificate authorities this machine adds to Debian's (a proxy in front of PyPI, say)
    # belong to the machine, not to the project: the new root trusts them too.
    # (A root without ca-certificates yet gets them when it installs it: its postinst reads the folder.)
    if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
        mkdir -p "$root/usr/local/share/ca-certificates"
        cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
        chroot "$root" update-ca-certificates >/dev/null 2>&1 || true
    fi
}

# Binds the named folders of the project's cache (~/.cache/nvme-csd/NAME: dl, kernel, ccache,
# ...) into $root's, each alone: what is not named starts empty there.
root_mount_project_cache() {
    local d
    for d in "$@"; do
        mkdir -p "$root_cache/nvme-csd/$d" "$root/root/.cache/nvme-csd/$d"
        mount --bind "$root_cache/nvme-csd/$d" "$root/root/.cache/nvme-csd/$d"
    done
}

# Runs a bash command line in $root with a clean environment (extra NAME=VALUE first).
root_run() {
    local cmd=$1
    shift
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        TERM=dumb DEBIAN_FRONTEND=noninteractive "$@" chroot "$root" /bin/bash -c "$cmd"
}

# The packages the README's Requirements say a new user installs first (its `apt install
# ...`), as README.md at COMMIT of $top names them.
root_first_packages() {
    local pkgs
    pkgs=$(git -C "$top" show "$1:README.md" | grep -o '`apt install [a-z0-9 .+-]*`' | head -n 1 | tr -d '`')
    [ -n "$pkgs" ] || { echo "root: the README's Requirements name no 'apt install' of the first packages" >&2; return 1; }
    echo "${pkgs#apt install }"
}

# Installs in $root what the README's Requirements say to install first (root_first_packages
# of COMMIT), with apt-get as a user's `apt install` (recommends included; -y, since no one answers).
root_install_first() {
    local pkgs
    pkgs=$(root_first_packages "$1") || return 1
    echo "root: apt install $pkgs (the README's Requirements)"
    root_run "apt-get update -qq && apt-get install -y -q $pkgs"
}

# Clones this repository into $root's /root/nvme-csd with the root's own git (its git folder
# bound read-only, so no build output or untracked file comes along) and checks out COMMIT.
root_clone() {
    local git_dir rc=0
    git_dir=$(cd "$top" && cd "$(git rev-parse --git-common-dir)" && pwd)
    mkdir -p "$root/mnt/origin.git"
    mount --bind -o ro "$git_dir" "$root/mnt/origin.git" || return 1
    root_run "git clone -q --no-local /mnt/origin.git /root/nvme-csd && git -C /root/nvme-csd checkout -q $1" || rc=$?
    umount "$root/mnt/origin.git"
    return $rc
}
