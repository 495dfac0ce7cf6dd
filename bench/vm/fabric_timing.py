# SPDX-License-Identifier: MIT
"""One drive three ways, in one guest and one run: local (PCIe in the guest), over NVMe/TCP on
the guest's loopback, and another guest's drive over NVMe/TCP on a virtio-net link. The
filter and reduce of bench/vm/drive_scaling.py, in the drive and by get + numpy: median
seconds of 3 runs, bytes over the bus (counted by the library) and over the network
interface (its rx + tx counters). Usage: fabric_timing.py LABEL=NODE:IFACE ...
Run by bench/run-fabric-timing.sh."""
import sys

import nvme_csd
from drive_scaling import bus_moved, median_time, operations, prepare


def net_bytes(iface):
    """Bytes received plus sent so far on a network interface (on lo, received only: each
    byte is both sent and received there)."""
    base = f"/sys/class/net/{iface}/statistics/"
    keys = ("rx_bytes",) if iface == "lo" else ("rx_bytes", "tx_bytes")
    return sum(int(open(base + k).read()) for k in keys)


def measured(ds, iface, fn):
    """(bytes over the bus, bytes over the network, NVMe commands) of one call of fn."""
    n0 = net_bytes(iface)
    commands, bus = bus_moved(ds, fn)
    return bus, net_bytes(iface) - n0, commands


def main():
    print("| drive | filter in drive | reduce in drive | filter: get + numpy | reduce: get + numpy |"
          " commands: filter, reduce / get | bus bytes: filter, reduce / get | network bytes: filter, reduce / get |")
    print("|---|---|---|---|---|---|---|---|")
    for arg in sys.argv[1:]:
        label, _, rest = arg.partition("=")
        node, _, iface = rest.partition(":")
        with nvme_csd.open_many([node]) as ds:
            prepare(ds)
            ops = operations(ds)
            t = {k: median_time(fn) for k, fn in ops.items()}
            m = {k: measured(ds, iface, fn) for k, fn in ops.items()}
            net = (f"{m['filter'][1]:,} B, {m['reduce'][1]:,} B / {m['reduce_host'][1]:,} B" if label != "local"
                   else "none")
            print(f"| {label} | {t['filter'] * 1e3:.0f} ms | {t['reduce'] * 1e3:.0f} ms | {t['filter_host'] * 1e3:.0f} ms |"
                  f" {t['reduce_host'] * 1e3:.0f} ms | {m['filter'][2]}, {m['reduce'][2]} / {m['reduce_host'][2]}"
                  f" | {m['filter'][0]:,} B, {m['reduce'][0]:,} B / {m['reduce_host'][0]:,} B"
                  f" | {net} |", flush=True)


if __name__ == "__main__":
    main()
