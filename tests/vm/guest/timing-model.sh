# SPDX-License-Identifier: MIT
# The timing model seen from inside the guest (csd.model.*): one workload bound by each
# resource (media, link in and out, compute, QD1 latency), Executes queueing on the compute units,
# and fio's sequential and 4 KiB random reads, each measured on the guest's clock and
# checked against the time worked out from the configured parameters; a second boot runs
# the same in exact mode under -icount (docs/timing-model.md), where the host's load no
# longer shows.
# vm: csd=on slm=64M cu=2 lbads=12 disk=256M solo timeout=400 device=csd.model.link-gbps=0.005,csd.model.link-latency-ns=50000,csd.model.media-read-gbps=0.1,csd.model.media-read-latency-ns=30000000,csd.model.media-write-gbps=0.1,csd.model.media-write-latency-ns=500000,csd.model.slm-gbps=1,csd.model.unit-gflops=0.125,csd.model.unit-gbps=0.2
# vm: csd=on slm=64M cu=2 lbads=12 disk=256M solo timeout=400 exact icount=0 device=csd.model.link-gbps=0.005,csd.model.link-latency-ns=50000,csd.model.media-read-gbps=0.1,csd.model.media-read-latency-ns=30000000,csd.model.media-write-gbps=0.1,csd.model.media-write-latency-ns=500000,csd.model.slm-gbps=1,csd.model.unit-gflops=0.125,csd.model.unit-gbps=0.2
exec python3 /csd/tests/timing_model.py
