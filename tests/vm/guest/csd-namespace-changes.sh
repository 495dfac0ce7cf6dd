# SPDX-License-Identifier: MIT
# Namespace detach, attach and format while CSD commands wait for the drive: each waiting
# command completes with a status and QEMU keeps running (an outside review crashed it:
# SIGSEGV on detach under a waiting gather); metadata / PI formats are refused.
# vm: csd=on slm=128M cu=1 subsys alone timeout=400
exec python3 /csd/tests/csd_namespace_changes.py
