# SPDX-License-Identifier: MIT
# Controller resets and namespace rescans while Executes, SLM Loads and queued commands
# (more than the compute units) are in flight: no crash, no hang, the device keeps working
# and SLM survives the reset.
# vm: csd=on slm=128M cu=1 timeout=300
exec python3 /csd/tests/csd_reset.py
