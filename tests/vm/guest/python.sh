# SPDX-License-Identifier: MIT
# The Python bindings' pytest suite in the guest (Debian's python3 and numpy) against the
# emulated device over ioctl passthrough on both front ends (the vendor commands and the
# standard NVMe computational storage command sets) and, in the same pytest session, over
# io_uring on the vendor one and in host mode (the standard one over io_uring:
# library-uring.sh), and the README quickstart.
# vm: csd=on slm=64M device=csd.nvme-cs=on timeout=500
. /csd/tests/lib.sh
cd /csd/python
ng=$(nvm_ng)
# The image carries bytecode for the standard library, numpy and pytest (read-only /usr:
# without it every Python process compiled them anew, ~17 s a start under TCG).
python3 -c "import os, json, numpy, _pytest; assert all(os.path.isfile(m.__spec__.cached) for m in (json, numpy, _pytest)), 'no .pyc'" \
    || fail "the guest image has no bytecode for its Python modules"
# One session (one Python start and collection in the guest): every test over ioctl, and
# those that take the drive again over io_uring on the vendor front end and in host mode.
CSD_TEST_DEVICE=$ng CSD_TEST_URING=also python3 -m pytest -q -rs -p no:cacheprovider tests \
    || fail "pytest over ioctl and io_uring"
CSD_NG=$ng python3 - <<'PY' || fail "README quickstart"
import os, numpy as np, nvme_csd
with nvme_csd.open(os.environ["CSD_NG"]) as dev:
    dev.store.format(force=True)                       # force: over an earlier run's store
    dev.store["w"] = np.random.rand(256, 256).astype(np.float32)
    print(dev.gemm(dev.store["w"], dev.store["w"]).shape, dev.stats["exec_cmds"])
PY
