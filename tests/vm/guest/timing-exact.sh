# SPDX-License-Identifier: MIT
# Exact mode (csd.exact=on, docs/timing-model.md) with -icount: the host is made slower than
# the drive being modelled (its backing file throttled to 8 MB/s, a gemm the model runs 2-5x
# faster than this host), and every completion still lands at its modelled time on the
# guest's clock, the same in every repetition; C1h counts the holds, no overrun.
# vm: csd=on slm=64M cu=2 lbads=12 disk=256M solo timeout=600 exact icount=0 throttle=8M device=csd.model.link-gbps=7,csd.model.link-latency-ns=10000,csd.model.media-read-gbps=10,csd.model.media-read-latency-ns=100000000,csd.model.media-write-gbps=10,csd.model.media-write-latency-ns=100000000,csd.model.slm-gbps=25,csd.model.unit-gflops=20,csd.model.unit-gbps=40
exec python3 /csd/tests/timing_exact.py
