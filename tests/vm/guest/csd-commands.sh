# SPDX-License-Identifier: MIT
# Detection (Identify VS bytes, effects log, capabilities), SLM Write/Read/Load/Store
# against the namespace, every status the command set defines, statistics.
# vm: csd=on slm=16M cu=2 lbads=12 alone
exec python3 /csd/tests/csd_commands.py
