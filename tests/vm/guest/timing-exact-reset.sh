# SPDX-License-Identifier: MIT
# Exact mode (outside review of issue 42): csd-reset.sh's resets with gemms and SLM Loads in flight, in exact mode
# (the host far slower than the model's compute unit: commands work past their finishes).
# vm: csd=on slm=128M cu=1 timeout=400 exact device=csd.model=gen4x4-8core,csd.model.unit-gflops=1000
exec python3 /csd/tests/csd_reset.py
