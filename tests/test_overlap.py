"""Tokenizing the next Arrow batch while the engine runs this one (`--overlap`) changes nothing
but timing: same rows, same scores, same order."""
import threading

import pandas as pd
import pytest

from tests.jobhelpers import pairs_frame, read_partition
from udfs.scorer import ahead


def test_ahead_keeps_order_and_runs_one_item_ahead():
    pulled, started = [], []
    second_started = threading.Event()

    def items():
        for i in range(5):
            pulled.append(i)
            yield i

    def fn(i):
        started.append(i)
        if i == 1:
            second_started.set()
        return i * 10

    it = ahead(items(), fn)
    assert next(it) == 0
    assert second_started.wait(5)  # item 1 was being prepared while the caller held item 0
    assert pulled == [0, 1]  # and nothing further was read
    assert list(it) == [10, 20, 30, 40]
    assert started == [0, 1, 2, 3, 4]


def test_ahead_passes_errors_through():
    def fn(i):
        if i == 2:
            raise ValueError("bad batch")
        return i

    it = ahead(iter(range(4)), fn)
    assert [next(it), next(it)] == [0, 1]
    with pytest.raises(ValueError, match="bad batch"):
        next(it)


@pytest.mark.spark
@pytest.mark.parametrize("task", ["embedding", "pair-classification"])
def test_overlap_returns_identical_results(spark, compile_artifact, tmp_path, task):
    from jobs.duplicates import main

    frame = pairs_frame(120, seed=5)
    frame.to_parquet(tmp_path / "in.parquet")
    model = compile_artifact(task)
    outputs = {}
    for mode, extra in (("plain", []), ("overlap", ["--overlap"])):
        out = tmp_path / mode
        argv = ["--input", str(tmp_path / "in.parquet"), "--output", str(out), "--model", str(model),
                "--run-date", "2026-03-04", "--num-partitions", "2", "--arrow-batch-rows", "16",
                "--progress-seconds", "3600", *extra]
        assert main(argv) == 0
        outputs[mode] = read_partition(out, "2026-03-04").sort_values("pair_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(outputs["plain"], outputs["overlap"])
    assert (outputs["overlap"].status == "ok").all() and len(outputs["overlap"]) == 120
