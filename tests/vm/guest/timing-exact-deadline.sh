# SPDX-License-Identifier: MIT
# Exact mode (found by the outside review of issue 42): a working gemm's modelled finish must hold the guest even when another
# command's completion (an NVM Read done early, held by the model until a LATER finish)
# is queued meanwhile. The core once re-armed the port's one timer for the read's finish
# (csd_core_model_hold), and the gemm completed at the read's 150 ms instead of its 21.5.
# vm: csd=on slm=64M cu=1 lbads=12 disk=256M solo timeout=400 exact icount=0 device=csd.model.link-gbps=7,csd.model.link-latency-ns=10000,csd.model.media-read-gbps=10,csd.model.media-read-latency-ns=150000000,csd.model.media-write-gbps=10,csd.model.media-write-latency-ns=1000000,csd.model.slm-gbps=25,csd.model.unit-gflops=100,csd.model.unit-gbps=400
exec python3 /csd/tests/timing_exact_deadline.py
