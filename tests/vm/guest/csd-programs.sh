# SPDX-License-Identifier: MIT
# Every device-defined program end to end through the kernel's passthrough ioctl:
# data in with SLM Write, Execute, results out with SLM Read, checked against numpy.
# vm: csd=on slm=64M
exec python3 /csd/tests/csd_programs.py
