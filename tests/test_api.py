"""The Python API (jobs/api.py) inside a plain PySpark session that the test drives itself: the
caller reads, composes and writes; the API adds columns lazily and reports after the action."""
import numpy as np
import pandas as pd
import pytest

from jobs import api
from jobs.duplicates import main as duplicates_main
from tests.jobhelpers import pairs_frame, read_partition, run_job

pytestmark = pytest.mark.spark


def _jobs(spark) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


@pytest.mark.parametrize("task", ["embedding", "pair-classification"])
def test_duplicates_as_a_dataframe_function_equals_the_job(spark, compile_artifact, tmp_path, capsys, task):
    model = compile_artifact(task)
    frame = pairs_frame(120, seed=5)
    frame.loc[3, ["left_title", "left_brand", "left_description"]] = None  # one invalid row
    frame.to_parquet(tmp_path / "pairs.parquet")
    rc, job_summary, _ = run_job(duplicates_main, capsys, input=tmp_path / "pairs.parquet", output=tmp_path / "job",
                                 model=model, run_date="2026-05-01")
    assert rc == 0

    pairs = spark.read.parquet(str(tmp_path / "pairs.parquet"))
    before = _jobs(spark)
    scores = api.duplicates(pairs, str(model))
    assert _jobs(spark) == before  # lazy: nothing ran yet
    assert scores.columns == ["pair_id", "score", "is_duplicate", "model", "status", "error", "truncated"]
    scores.where("pair_id IS NOT NULL").write.parquet(str(tmp_path / "api"))  # the caller's own write
    got = pd.read_parquet(tmp_path / "api").sort_values("pair_id").reset_index(drop=True)
    want = read_partition(tmp_path / "job", "2026-05-01").sort_values("pair_id").reset_index(drop=True)
    assert got.pair_id.tolist() == want.pair_id.tolist() and len(got) == 120
    for c in ("status", "error", "is_duplicate", "truncated", "model"):
        assert got[c].astype(object).where(got[c].notna(), None).tolist() == \
            want[c].astype(object).where(want[c].notna(), None).tolist(), c
    np.testing.assert_allclose(got.score, want.score, rtol=0, atol=1e-6)

    summary = api.summary(scores)
    assert summary["rows_out"] == 120 and summary["ok"] == 119 and summary["invalid"] == 1
    assert summary["invalid_by_reason"]["null_text"] == 1 and summary["units_scored"] > 0
    assert summary["tasks"] and summary["tasks"][0]["device"] == "cpu"  # the job loaded the worker's engine already
    assert summary["dedup"] == ("run" if task == "embedding" else "batch") and summary["backend"] == "onnx"
    assert summary["real_tokens"] == job_summary["real_tokens"] > 0
    api.release(scores)


def test_query_intent_and_embed_texts_compose_with_the_callers_columns(spark, compile_artifact):
    queries = spark.createDataFrame(pd.DataFrame({"qid": ["a", "b", "c", "d"], "q": ["red shoes", "where is my order",
                                                                                   "red shoes", None],
                                                  "country": ["de", "fr", "de", "it"]}))
    intents = api.query_intent(queries, str(compile_artifact("text-classification")), id_column="qid",
                               query_column="q", top_k=2)
    rows = {r.qid: r for r in intents.join(queries.select("qid", "country"), "qid").collect()}
    assert rows["a"].country == "de" and len(rows["a"].top_k) == 2 and rows["a"].intent == rows["c"].intent
    assert rows["d"].status == "invalid_input" and rows["d"].intent is None
    assert api.summary(intents)["rows_out"] == 4

    texts = spark.createDataFrame(pd.DataFrame({"id": ["x", "y", "z"], "text": ["tv", "blender", "tv"]}))
    vectors = {r.id: r for r in api.embed_texts(texts, str(compile_artifact("embedding")), dedup="batch").collect()}
    assert vectors["x"].embedding == vectors["z"].embedding and len(vectors["y"].embedding) == vectors["y"].dim


def test_bad_arguments_raise_one_line_before_anything_runs(spark, compile_artifact, tmp_path):
    pairs = spark.createDataFrame(pairs_frame(4))
    intent_model = str(compile_artifact("text-classification"))
    cases = [
        (dict(model=str(tmp_path / "missing")), "--model"),
        (dict(model=intent_model), "is a text-classification artifact; this job needs one of"),
        (dict(model=intent_model, cache=str(tmp_path / "cache")), "use the jobs' --cache"),
        (dict(model=intent_model, dedup="sometimes"), "dedup must be one of"),
        (dict(model=intent_model, backend="gpu-please"), "backend must be one of"),
    ]
    before = _jobs(spark)
    for kwargs, says in cases:
        with pytest.raises(ValueError) as e:
            api.duplicates(pairs, **kwargs)
        assert says in str(e.value) and "\n" not in str(e.value)
    assert _jobs(spark) == before
