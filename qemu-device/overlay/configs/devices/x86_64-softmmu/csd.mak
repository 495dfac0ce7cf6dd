# SPDX-License-Identifier: GPL-2.0-or-later
# nvme-csd's QEMU (configure --without-default-devices --with-devices-x86_64=csd): the
# machines and devices the project starts, and what they select. q35 runs the guests (with
# virtio-blk for the root, virtio-net for NVMe/TCP between guests, ivshmem for the
# peer-to-peer window); pc (i440FX) is where QEMU's own nvme qos-tests run.
CONFIG_Q35=y
CONFIG_I440FX=y
CONFIG_NVME_PCI=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_BLK=y
CONFIG_VIRTIO_NET=y
CONFIG_IVSHMEM_DEVICE=y
