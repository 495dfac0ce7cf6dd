"""The device under test: $CSD_TEST_DEVICE (e.g. /dev/ng0n1 in the guest, with
$CSD_TEST_URING=1 for io_uring), else a fresh in-process device per test."""
import os

import pytest

import nvme_csd


@pytest.fixture
def dev(tmp_path):
    path = os.environ.get("CSD_TEST_DEVICE") or f"emu:{tmp_path}/ns.img?size=64M&slm=32M"
    d = nvme_csd.open(path, uring=os.environ.get("CSD_TEST_URING") == "1")
    d.store.format()
    yield d
    d.close()
