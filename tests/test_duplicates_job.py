"""The duplicates job's contract (README.md, "The jobs") on local Spark with tiny random BERTs."""
import json

import numpy as np
import pandas as pd
import pytest

from jobs.duplicates import main
from tests.jobhelpers import pairs_frame, read_partition, run_job

pytestmark = pytest.mark.spark

BAD_ROWS = [
    {"pair_id": "null-left", "left_title": None, "left_brand": None, "left_description": None, "right_title": "x"},
    {"pair_id": "blank-right", "left_title": "x", "right_title": "   \t", "right_brand": "", "right_description": None},
    {"pair_id": "ctrl-only", "left_title": "\x00\x07\u200b", "right_title": "x"},
    {"pair_id": None, "left_title": "no id", "right_title": "x"},
    {"pair_id": "dup", "left_title": "first", "right_title": "x"},
    {"pair_id": "dup", "left_title": "second", "right_title": "x"},
    {"pair_id": "huge", "left_title": "t", "left_description": "word " * 20_000, "right_title": "x"},
    {"pair_id": "unicode", "left_title": "🌟 中文 עברית \x1b[31m", "right_title": "Ünïcödé"},
]


@pytest.fixture(scope="module")
def pair_input(tmp_path_factory):
    df = pd.concat([pairs_frame(300), pd.DataFrame(BAD_ROWS)], ignore_index=True)
    path = tmp_path_factory.mktemp("in") / "pairs.parquet"
    df.to_parquet(path)
    return path, df


@pytest.fixture(scope="module", params=["pair-classification", "embedding"])
def scored(request, spark, compile_artifact, pair_input, tmp_path_factory):
    path, df = pair_input
    out = tmp_path_factory.mktemp("out")
    model = compile_artifact(request.param)
    from jobs.duplicates import main as job_main

    rc = job_main(["--input", str(path), "--output", str(out), "--model", str(model), "--run-date", "2026-01-02",
                   "--max-invalid-fraction", "0.05", "--progress-seconds", "3600", "--num-partitions", "3"])
    return {"rc": rc, "out": out, "model": model, "task": request.param, "input": df,
            "result": read_partition(out, "2026-01-02"),
            "summary": json.loads((out / "_runs" / "run_date=2026-01-02" / "summary.json").read_text())}


def test_every_input_row_appears_exactly_once(scored):
    res, df = scored["result"], scored["input"]
    assert scored["rc"] == 0
    assert len(res) == len(df)
    assert sorted(res.pair_id.fillna("<null>")) == sorted(df.pair_id.fillna("<null>"))


def test_output_schema(scored):
    res = scored["result"]
    assert list(res.columns) == ["pair_id", "score", "is_duplicate", "model", "status", "error", "truncated"]
    assert res.score.dtype == np.float64 and set(res.model) == {f"tiny-{scored['task']}@7"}


def test_bad_rows_are_classified_not_lost(scored):
    res = scored["result"]
    ok = res[res.status == "ok"]
    assert len(ok) == 300 + 2  # the generated rows, plus "huge" and "unicode"
    by = lambda pid: res[res.pair_id == pid]
    assert by("null-left").error.item().startswith("null_text: left side")
    assert by("blank-right").error.item().startswith("blank_text: right side")
    assert by("ctrl-only").error.item().startswith("blank_text: left side")
    assert res[res.pair_id.isna()].error.item().startswith("null_id")
    assert (by("dup").error.str.startswith("duplicate_id: pair_id appears 2 times")).all()
    assert by("huge").status.item() == "ok" and by("huge").truncated.item()
    assert by("unicode").status.item() == "ok"
    invalid = res[res.status == "invalid_input"]
    assert invalid.score.isna().all() and invalid.is_duplicate.isna().all()
    assert ok.score.notna().all() and ok.is_duplicate.notna().all()


def test_scores_are_probabilities_or_cosines_and_threshold_applied(scored):
    ok = scored["result"][scored["result"].status == "ok"]
    lo = 0.0 if scored["task"] == "pair-classification" else -1.0
    assert ok.score.between(lo, 1.0).all()
    assert (ok.is_duplicate == (ok.score >= 0.5)).all()


def test_summary_counts_match_output(scored):
    s, res = scored["summary"], scored["result"]
    assert s["rows_in"] == s["rows_out"] == len(res)
    assert s["ok"] == (res.status == "ok").sum() and s["invalid"] == (res.status == "invalid_input").sum()
    assert s["invalid_by_reason"] == {"null_id": 1, "duplicate_id": 2, "null_text": 1, "blank_text": 2}
    assert s["truncated"] == res.truncated.sum() >= 1
    # Python workers are reused, so an engine an earlier test loaded may still be cached.
    assert s["engine_loads"] == sum(t["loaded"] for t in s["tasks"]) and s["devices"] == ["cpu"]
    assert s["backend"] == "onnx"
    assert 0 < s["padding_efficiency"] <= 1 and s["real_tokens"] > 0
    assert s["model"] == f"tiny-{scored['task']}@7" and len(s["model_sha256"]) == 64
    assert {t["partition"] for t in s["tasks"]} == {0, 1, 2}
    if scored["task"] == "embedding":  # single texts: each worker says which tokenizer encodes them
        from engines.store import open_artifact
        from udfs.tokenize import TextEncoder

        model = scored["model"]
        route = TextEncoder(model / "tokenizer" / "tokenizer.json", open_artifact(model).max_seq_len).single_route
        assert s["single_text_tokenizer"] == [route]
    else:  # pairs always go to tokenizers
        assert s["single_text_tokenizer"] == []
    assert s["spark_application_id"]


def test_what_was_scored_is_named_and_adds_up_in_summary_and_report(scored):
    """The per-task counts, the timeline and the page count what the scorer ran (issue #25):
    rows in the per-batch plan (the cross-encoder), distinct texts in the run-level one (the
    bi-encoder), and each figure agrees with the summary's own."""
    s = scored["summary"]
    unit, total = ("rows", s["rows_out"]) if scored["task"] == "pair-classification" else \
        ("texts", s["dedup"]["units_scored"])
    assert s["scored_unit"] == unit and total > 0
    assert sum(t["scored"] for t in s["tasks"]) == sum(s["timeline"]["scored"]) == total
    width = s["timeline"]["bucket_seconds"]
    assert len(s["timeline"]["scored"]) * width == pytest.approx(s["scoring_seconds"], rel=1e-3)  # the whole stage
    # the input's sizing query runs before the scoring seconds start, and is reported apart
    assert 0 < s["sizing_seconds"] and s["sizing_seconds"] + s["scoring_seconds"] < s["wall_seconds"]
    page = (scored["out"] / "_runs" / "run_date=2026-01-02" / "report.html").read_text()
    assert f"{unit.capitalize()} scored per second over the scoring stage" in page and f"<th>{unit} scored</th>" in page
    assert f"{total:,} {unit} scored, counted" in page


def test_scores_do_not_depend_on_partitioning(scored, spark, tmp_path, capsys):
    path = tmp_path / "in.parquet"
    scored["input"].to_parquet(path)
    rc, _, _ = run_job(main, capsys, input=path, output=tmp_path / "o", model=scored["model"], run_date="2026-01-02",
                       max_invalid_fraction=0.05, num_partitions=1, batch_tokens=512)
    assert rc == 0
    a = scored["result"].set_index("pair_id").sort_index()
    b = read_partition(tmp_path / "o", "2026-01-02").set_index("pair_id").sort_index()
    assert (a.status == b.status).all()
    np.testing.assert_allclose(a.score.to_numpy(), b.score.to_numpy(), atol=1e-6, equal_nan=True)
