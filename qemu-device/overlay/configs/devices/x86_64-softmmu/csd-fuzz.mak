# SPDX-License-Identifier: GPL-2.0-or-later
# nvme-csd's libFuzzer QEMU (build-qemu.sh --fuzz): only the q35 machine and the nvme
# controller that tests/fuzz/qemu-fuzz-env.sh's generic-fuzz target drives.
CONFIG_Q35=y
CONFIG_NVME_PCI=y
