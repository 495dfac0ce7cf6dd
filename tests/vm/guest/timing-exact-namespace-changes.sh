# SPDX-License-Identifier: MIT
# Exact mode (outside review of issue 42): csd-namespace-changes.sh (detach, attach, format under waiting commands)
# in exact mode, the host far slower than the model's compute unit.
# vm: csd=on slm=128M cu=1 subsys alone timeout=500 exact device=csd.model=gen4x4-8core,csd.model.unit-gflops=1000
exec python3 /csd/tests/csd_namespace_changes.py
