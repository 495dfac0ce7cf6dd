# SPDX-License-Identifier: MIT
# Programs over objects larger than SLM (the store streams them in pieces, issue 43) keep the
# old guarantees in the guest: through csd.ko, a tenant streams over an object in its own
# LBA partition with a few MiB of SLM, while another tenant's SLM and its object store stay
# intact, and a crafted request past the partition is refused; on /dev/ng0n1, a real
# `nvme detach-ns` mid-stream ends the run with a clear error (no hang, no crash), and after
# attach-ns the store holds what it held, and streams again; a controller reset mid-stream
# ends it the same way, and the store frees what the run reserved.
# vm: csd=on slm=64M subsys alone timeout=400
exec python3 /csd/tests/stream_guarantees.py
