# SPDX-License-Identifier: MIT
"""The published trends of docs/perf.md (bench/trends/*.py) hold on tiny configurations of
the timing model: in-drive dependent lookups gain more at depth 6 than at depth 1 and more
across a long round trip than a short one, embedding bags pooled in the drive beat the
host's gather and pool for bags of 100, and filter offload gains more at 0.1 % than at
50 % selectivity. Every script checks its answers against the host's."""
import os
import pathlib
import sys

import pytest

pytest.importorskip("torch")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench" / "trends"))

pytestmark = pytest.mark.skipif(bool(os.environ.get("CSD_TEST_DEVICE")),
                                reason="the trends run on the host's in-process device")


def test_dependent_lookups_gain_grows_with_depth():
    import dependent_lookups
    rows = dependent_lookups.main(["--depths", "1,6", "--lookups", "2", "--scale", "1000"])
    gain = {(drive, d): th / td for drive, d, th, td, _, _ in rows}
    assert gain[("ll-nand-gen5", 6)] > gain[("ll-nand-gen5", 1)] * 1.3, gain
    assert gain[("ll-nand-gen5", 6)] > 1.3, gain


def test_dependent_lookups_gain_grows_with_round_trip():
    import dependent_lookups
    rows = dependent_lookups.main(["--fabric", "--depths", "3", "--rtts", "0,500", "--lookups", "2",
                                   "--scale", "50"])
    gain = {rtt: th / td for rtt, th, td, _, _, _ in rows}
    assert gain[500.0] > gain[0.0] * 1.5, gain


def test_embedding_bags_in_drive_beat_host_gathers():
    import embedding_bags
    rows = embedding_bags.main(["--rows", "2048", "--dims", "256", "--bags", "100", "--batch", "8",
                                "--batches", "1", "--scale", "20"])
    (dim, bag, td, th, tp, ov, overruns), = rows
    assert th > td, rows


def test_filter_offload_scans_split_over_drives_and_matches_cost():
    import filter_selectivity
    rows = filter_selectivity.main(["--records", "262144", "--drives", "1,4", "--sels", "0.001,0.5",
                                    "--scale", "50"])
    one, four = rows[1], rows[4]
    assert four[0.001][0] < one[0.001][0] * 0.75, rows   # four drives scan a quarter each, at once
    assert one[0.5][0] > one[0.001][0], rows             # half the records stored and read back
