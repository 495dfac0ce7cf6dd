# SPDX-License-Identifier: MIT
"""The device under test: $CSD_TEST_DEVICE (e.g. /dev/ng0n1 in the guest, with
$CSD_TEST_URING=1 for io_uring), else a fresh in-process device per test; every test that
takes `dev` runs once per front end (the vendor commands, the standard NVMe computational
storage command sets, and host mode: the programs on the host, docs/real-drives.md), a
drive that speaks only some of them skipping the others ($CSD_IGNORE_VENDOR=1: the vendor
signature and logs ignored, a standard-only drive). $CSD_TEST_URING=also runs them over
ioctl passthrough and then again over io_uring for the vendor and host front ends
(`vendor+uring`, `host+uring`) in the same session: one guest Python start for both."""
import os

import pytest

import nvme_csd


URING = os.environ.get("CSD_TEST_URING", "")
FRONT_ENDS = ["vendor", "nvme-cs", "host"] + (["vendor+uring", "host+uring"] if URING == "also" else [])


@pytest.fixture(params=FRONT_ENDS)
def dev(request, tmp_path):
    front_end, _, via = request.param.partition("+")
    # speaking the standard, the in-process device refuses the vendor SLM and program
    # commands, as a drive with only the standard front end would: nothing falls back
    only = "&vendor-io=0" if front_end == "nvme-cs" else ""  # host mode sends none either
    path = os.environ.get("CSD_TEST_DEVICE") or f"emu:{tmp_path}/ns.img?size=64M&slm=32M&nvme-cs=1{only}"
    try:
        d = nvme_csd.open(path, uring=URING == "1" or via == "uring", front_end=front_end)
    except nvme_csd.errors.CsdError as e:
        if "does not speak" in str(e):
            pytest.skip(f"the drive does not speak the {front_end} front end")
        raise
    assert d.front_end == front_end and (via != "uring" or d.transport == "uring")
    d.store.format(force=True)  # the drive under test may hold the last test's store
    yield d
    d.close()


def pytest_collection_modifyitems(config, items):
    """CSD_TEST_DEVICE_ONLY=1 keeps only the tests that take the drive under test (`dev`): the
    guest's repeat runs over other transports (io_uring, csd.ko, NVMe/TCP) skip the tests that
    open in-process devices of their own whatever drive is named; those run on the host and in
    the guest's first run (tests/vm/guest/python.sh)."""
    if os.environ.get("CSD_TEST_DEVICE_ONLY") != "1":
        return
    drop = [i for i in items if "dev" not in i.fixturenames]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [i for i in items if "dev" in i.fixturenames]
