# SPDX-License-Identifier: MIT
"""A drive of a DriveSet that goes away in the middle of the work: reductions of a tensor
striped over the drives run in a loop while another thread hot-removes one drive's PCI
function (sysfs 'remove'); every answer before the removal must be right and the first
failure must name that drive. Usage: drive_set_failure.py DRIVES VICTIM_INDEX REMOVE_PATH"""
import sys
import threading
import time

import numpy as np

import nvme_csd

drives, victim, remove = sys.argv[1].split(","), int(sys.argv[2]), sys.argv[3]
ds = nvme_csd.open_many(drives)
ds.format(force=True)  # over the stores drive-set.sh made there
x = np.random.default_rng(5).standard_normal(1 << 18).astype(np.float32)
ds.put("x", x, placement="striped")
want = float(x.astype(np.float64).sum())
removed = threading.Event()


def pull():
    time.sleep(1.0)
    removed.set()  # the removal starts: commands may fail from here on
    with open(remove, "w") as f:
        f.write("1")


threading.Thread(target=pull, daemon=True).start()
right = 0
deadline = time.monotonic() + 60
try:
    while time.monotonic() < deadline:
        got = ds.reduce("x", "sum")
        if abs(got - want) > 1e-3 * max(1.0, abs(want)):
            sys.exit(f"a wrong answer: {got} against {want} (after {right} right ones)")
        right += 1
    sys.exit("the drive's removal never showed as an error")
except nvme_csd.CsdError as e:
    why = str(e)
    if f"drive {victim} (" not in why:
        sys.exit(f"the error does not name drive {victim}: {why}")
    if right == 0 or not removed.is_set():
        sys.exit(f"failed before the drive's removal started ({right} answers): {why}")
    print(f"drive set: {right} right answers, then after drive {victim} was removed: {why}")
