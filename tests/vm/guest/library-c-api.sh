# SPDX-License-Identifier: MIT
# libcsd's C API in the guest against the emulated device.
# vm: csd=on slm=64M
exec csd-c-api-test /dev/ng0n1
