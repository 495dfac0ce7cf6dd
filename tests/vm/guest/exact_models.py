# SPDX-License-Identifier: MIT
"""The drive timing-exact.sh measures, written once: its settings come from that test's
'# vm:' line, and the modelled time of each command it times is computed here, for the
guest test (tests/vm/guest/timing_exact.py) and the boot-to-boot bench
(bench/exact-determinism/run.py) alike. Plain Python: it runs in the guest and on the host."""
import os

KiB, MiB = 1 << 10, 1 << 20
LBA = 4096                          # timing-exact.sh's lbads=12
GEMM_DESCRIPTOR_BYTES = 16 + 3 * 16 + 24   # header, three ranges, gemm's parameters


def vm_settings(script: str) -> dict:
    """The '# vm:' settings of a guest test script: key -> value ('' for a bare word), and
    'model': its device properties (key -> value)."""
    with open(script) as f:
        line = next(l for l in f.read().splitlines() if l.startswith("# vm:"))
    kv = dict(w.split("=", 1) if "=" in w else (w, "") for w in line[len("# vm:"):].split())
    kv["model"] = dict(p.split("=", 1) for p in kv.get("device", "").split(",") if "=" in p)
    return kv


def timing_exact_settings() -> dict:
    """vm_settings of timing-exact.sh, beside this file (the guest's /csd/tests, or the tree)."""
    return vm_settings(os.path.join(os.path.dirname(os.path.abspath(__file__)), "timing-exact.sh"))


class Model:
    """A drive's model from its csd.model.* properties: per-byte and fixed costs in ns."""

    def __init__(self, props: dict):
        self.link_ns_per_b = 1 / float(props["csd.model.link-gbps"])
        self.lat_ns = int(props["csd.model.link-latency-ns"])
        self.media_read_ns_per_b = 1 / float(props["csd.model.media-read-gbps"])
        self.media_read_lat = int(props["csd.model.media-read-latency-ns"])
        self.media_write_ns_per_b = 1 / float(props["csd.model.media-write-gbps"])
        self.media_write_lat = int(props["csd.model.media-write-latency-ns"])
        self.slm_ns_per_b = 1 / float(props["csd.model.slm-gbps"])
        self.unit_flops_per_ns = float(props["csd.model.unit-gflops"])

    def slm_load(self, n: int) -> float:
        """SLM Load of n bytes: media read, into SLM, one command's latency."""
        return self.media_read_lat + n * self.media_read_ns_per_b + n * self.slm_ns_per_b + self.lat_ns

    def slm_store(self, n: int) -> float:
        """SLM Store of n bytes: out of SLM, media write, one command's latency."""
        return n * self.slm_ns_per_b + self.media_write_lat + n * self.media_write_ns_per_b + self.lat_ns

    def gemm(self, m: int, n: int, k: int, descriptor_bytes: int = GEMM_DESCRIPTOR_BYTES) -> float:
        """An Execute of gemm m x n x k: its descriptor over the link, 2mnk FLOPs on one unit."""
        return descriptor_bytes * self.link_ns_per_b + 2 * m * n * k / self.unit_flops_per_ns + self.lat_ns

    def nvm_read(self, n: int) -> float:
        """An NVM Read of n bytes: media read, the data over the link, one command's latency."""
        return self.media_read_lat + n * self.media_read_ns_per_b + n * self.link_ns_per_b + self.lat_ns
