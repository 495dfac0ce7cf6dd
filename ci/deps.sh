#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs every Debian package nvme-csd needs (as root) and the apt entries they and the
# source downloads come from (ci/apt-sources.sh); does nothing when all are there.
# Usage: ci/deps.sh [--check]   (--check: only report what is missing, exit 1 if any)
set -euo pipefail

# From bookworm-backports: QEMU 10 needs meson >= 1.5.
backports=(meson python3-pycotap)
packages=(
    # toolchain and QEMU build
    build-essential pkg-config ninja-build ccache flex bison python3 python3-venv
    libglib2.0-dev libpixman-1-dev libfdt-dev libslirp-dev
    dpkg-dev xz-utils bzip2 rsync patch cpio e2fsprogs
    # guest kernel module builds (BTF for modules)
    dwarves
    # firmware: qboot and option ROMs, SeaBIOS and the e1000 ROM for QEMU's qtests
    qemu-system-data seabios ipxe-qemu
    # guest userland (copied into the guest image)
    busybox-static nvme-cli fio python3-numpy python3-pytest zstd lz4
    # device core and host library; nvme-cli with the csd plugin (host/nvme-cli-plugin: Debian
    # nvme-cli's build needs meson, libnvme-dev, libjson-c-dev, zlib1g-dev, pkg-config)
    libopenblas-dev libzstd-dev liblz4-dev libxxhash-dev libgtest-dev libgmock-dev
    libnvme-dev libjson-c-dev zlib1g-dev libssl-dev liburing-dev libisal-dev nlohmann-json3-dev libcli11-dev libdpdk-dev clang libclang-rt-14-dev pybind11-dev python3-pybind11 python3-setuptools python3-dev
)

missing() {
    local p
    for p in "$@"; do
        dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || echo "$p"
    done
}

meson_ok() {
    command -v meson >/dev/null && dpkg --compare-versions "$(meson --version)" ge 1.5
}

need=$(missing "${packages[@]}")
need_bpo=$(missing "${backports[@]}")
meson_ok || need_bpo="$need_bpo meson"
# The trixie and bookworm deb-src entries too (QEMU's and nvme-cli's source come later, with
# apt-get source): checked even when every package is there.
sources_ok=1
"$(dirname "$0")/apt-sources.sh" --check 2>/dev/null || sources_ok=0

if [ -z "$(echo $need $need_bpo)" ] && [ $sources_ok = 1 ]; then
    exit 0
fi
if [ "${1:-}" = "--check" ] || [ "$(id -u)" != 0 ]; then
    [ -z "$(echo $need $need_bpo)" ] || echo "deps: missing packages:" $need $need_bpo >&2
    [ $sources_ok = 1 ] || echo "deps: missing apt entries: ${CSD_APT_ETC:-/etc/apt}/sources.list.d/nvme-csd.sources" \
                                "(bookworm-backports, trixie and bookworm deb-src; ci/apt-sources.sh writes it)" >&2
    [ "${1:-}" = "--check" ] || echo "deps: run 'sudo make deps' (or as root)" >&2
    exit 1
fi

"$(dirname "$0")/apt-sources.sh"
[ -n "$(echo $need $need_bpo)" ] || exit 0
echo "deps: installing" $need $need_bpo
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ -n "$(echo $need)" ]; then
    apt-get install -y -qq --no-install-recommends $need
fi
if [ -n "$(echo $need_bpo)" ]; then
    apt-get install -y -qq --no-install-recommends -t bookworm-backports $(echo $need_bpo | tr ' ' '\n' | sort -u)
fi
meson_ok || { echo "deps: meson >= 1.5 is still missing" >&2; exit 1; }
