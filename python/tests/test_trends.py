# SPDX-License-Identifier: MIT
"""The published trends of docs/perf.md (bench/trends/*.py) hold on tiny configurations of
the timing model: in-drive dependent lookups gain more at depth 6 than at depth 1 and more
across a long round trip than a short one, embedding bags pooled in the drive beat the
host's gather and pool for bags of 100, and a filter's scan shrinks as drives are added.
Each script checks its answers against the host's; the drives' times are the model's
virtual clock (exact=on), whatever this machine's load, so a rerun gives the same numbers."""
import os
import pathlib
import sys

import pytest

pytest.importorskip("torch")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench" / "trends"))

pytestmark = pytest.mark.skipif(bool(os.environ.get("CSD_TEST_DEVICE")),
                                reason="the trends run on the host's in-process device")


def lookups():
    """The dependent_lookups script, or a skip where the example programs were not built."""
    import dependent_lookups
    if not (dependent_lookups.BPF / "btree_lookup.o").exists():
        pytest.skip(f"no example programs in {dependent_lookups.BPF} (clang for the BPF target)")
    return dependent_lookups


def test_dependent_lookups_gain_grows_with_depth():
    # B+-trees of depth 1 and 6 (fanout 2: 2 and 64 keys), looked up by the drive's chase
    dependent_lookups = lookups()
    rows = dependent_lookups.main(["--depths", "1,6", "--fanout", "2", "--lookups", "2"])
    gain = {(drive, d): th / td for drive, d, th, td, _ in rows}
    assert gain[("ll-nand-gen5", 6)] > gain[("ll-nand-gen5", 1)] * 1.3, gain
    assert gain[("ll-nand-gen5", 6)] > 1.3, gain
    # the model's clock, not the host's: six host levels cost six times one, to the ns
    host = {(drive, d): th for drive, d, th, _, _ in rows}
    for drive in ("ll-nand-gen5", "gen4x4-8core"):
        assert host[(drive, 6)] == pytest.approx(6 * host[(drive, 1)], abs=1e-9), host
    # nvme_csd.btree's lookup is the chase alone: one command, its value from the completion
    assert all(tl == pytest.approx(td, abs=1e-9) for _, _, _, td, tl in rows), rows


def test_dependent_lookups_gain_grows_with_round_trip():
    dependent_lookups = lookups()
    rows = dependent_lookups.main(["--fabric", "--depths", "3", "--fanout", "2", "--rtts", "0,500",
                                   "--lookups", "2"])
    gain = {rtt: th / td for rtt, th, td in rows}
    assert gain[500.0] > gain[0.0] * 1.5, gain


def test_embedding_bags_in_drive_beat_host_gathers():
    import embedding_bags
    rows = embedding_bags.main(["--rows", "2048", "--dims", "256", "--bags", "100", "--batch", "8",
                                "--batches", "1"])
    (dim, bag, td, th, tp), = rows
    assert th > td, rows


def test_filter_offload_scans_split_over_drives_and_matches_cost():
    import filter_selectivity
    import modelled
    args = ["--records", "262144", "--drives", "1,4", "--sels", "0.001,0.5"]
    rows = filter_selectivity.main(args)
    one, four = rows[1], rows[4]
    assert four[0.001][0] < one[0.001][0] * 0.75, rows   # four drives scan a quarter each, at once
    assert one[0.5][0] > one[0.001][0], rows             # half the records stored and read back
    # the model's clock: the same query again on new drives takes the same modelled time, to the ns
    again = filter_selectivity.measure("gen4x4-8core", 4, filter_selectivity.table(262144), [0.001],
                                       modelled.workdir())
    assert again[0.001][0] == pytest.approx(four[0.001][0], abs=1e-9), (again, four)
    assert again[0.001][1] - again[0.001][2] == pytest.approx(four[0.001][1] - four[0.001][2], abs=1e-9)
