"""The query-intent job's contract on a tiny random classifier."""
import json

import numpy as np
import pandas as pd
import pytest

from jobs.query_intent import main
from tests.jobhelpers import read_partition, run_job

pytestmark = pytest.mark.spark

LABELS = ["order_status", "product_search", "returns_refunds", "store_locator"]  # sorted id2label of the tiny model


@pytest.fixture(scope="module")
def queries():
    rows = [{"query_id": f"q{i}", "query": q} for i, q in enumerate(
        ["where is my order", "red running shoes size 10", "return a broken blender", "stores near me open now"] * 25)]
    rows += [{"query_id": "null", "query": None}, {"query_id": "blank", "query": "  \u200b "},
             {"query_id": "long", "query": "cheap " * 20_000}, {"query_id": "ctrl", "query": "tv\x00\x1b[0m 55 inch"},
             {"query_id": "q1", "query": "duplicate id"}]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def intent_model(compile_artifact):
    return compile_artifact("text-classification")


def test_contract_top_k_and_bad_rows(spark, intent_model, queries, tmp_path, capsys):
    queries.to_parquet(tmp_path / "q.parquet")
    rc, summary, _ = run_job(main, capsys, input=tmp_path / "q.parquet", output=tmp_path / "out", model=intent_model,
                             run_date="2026-02-03", top_k=2, max_invalid_fraction=0.1)
    res = read_partition(tmp_path / "out", "2026-02-03")
    assert rc == 0 and len(res) == len(queries)
    assert sorted(res.query_id) == sorted(queries.query_id)
    assert list(res.columns) == ["query_id", "intent", "confidence", "top_k", "model", "status", "error", "truncated"]
    ok = res[res.status == "ok"]
    assert len(ok) == 100 - 1 + 2  # generated q1 clashes with an extra q1; "long" and "ctrl" score
    for _, row in ok.iterrows():
        labels = [t["label"] for t in row.top_k]
        scores = [t["score"] for t in row.top_k]
        assert len(labels) == 2 and labels[0] == row.intent and scores[0] == pytest.approx(row.confidence)
        assert scores[0] >= scores[1] and set(labels) <= set(LABELS)
    by = res.set_index("query_id").error.to_dict()
    assert by["null"].startswith("null_text") and by["blank"].startswith("blank_text")
    assert res[res.query_id == "q1"].error.str.startswith("duplicate_id").all()
    assert res.set_index("query_id").loc["long", "truncated"]
    bad = res[res.status != "ok"]
    assert bad.intent.isna().all() and bad.confidence.isna().all() and bad.top_k.isna().all()
    assert summary["invalid_by_reason"] == {"null_id": 0, "duplicate_id": 2, "null_text": 1, "blank_text": 1}


def test_top_k_larger_than_labels_is_clamped_and_same_queries_same_intent(spark, intent_model, queries, tmp_path, capsys):
    queries.to_json(tmp_path / "q.jsonl", orient="records", lines=True)
    rc, _, _ = run_job(main, capsys, input=tmp_path / "q.jsonl", output=tmp_path / "out", model=intent_model,
                       run_date="2026-02-04", top_k=50, max_invalid_fraction=0.1)
    res = read_partition(tmp_path / "out", "2026-02-04")
    ok = res[res.status == "ok"]
    assert rc == 0 and ok.top_k.map(len).eq(len(LABELS)).all()
    np.testing.assert_allclose(ok.top_k.map(lambda t: sum(x["score"] for x in t)), 1.0, rtol=1e-6)
    same = ok[ok.query_id.isin([f"q{i}" for i in range(0, 100, 4)])]
    assert same.intent.nunique() == 1 and same.confidence.nunique() == 1


def test_non_string_ids_and_custom_column_names(spark, intent_model, tmp_path, capsys):
    pd.DataFrame({"qid": [10, 11], "text": ["tv", "blender"]}).to_parquet(tmp_path / "q.parquet")
    rc, summary, _ = run_job(main, capsys, input=tmp_path / "q.parquet", output=tmp_path / "out", model=intent_model,
                             run_date="2026-02-05", id_column="qid", query_column="text")
    res = read_partition(tmp_path / "out", "2026-02-05")
    assert rc == 0 and sorted(res.qid) == ["10", "11"] and summary["ok"] == 2


def test_artifact_without_labels_fails_at_start(spark, intent_model, artifact_copy, tmp_path, capsys):
    bad = artifact_copy(intent_model)
    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["labels"] = []
    (bad / "manifest.json").write_text(json.dumps(manifest))
    rc, _, err = run_job(main, capsys, input=tmp_path / "nothing", output=tmp_path / "out", model=bad)
    assert rc == 2 and "needs labels; the manifest has none" in err and not (tmp_path / "out").exists()


def test_pair_artifact_is_refused(spark, compile_artifact, tmp_path, capsys):
    rc, _, err = run_job(main, capsys, input=tmp_path / "nothing", output=tmp_path / "out",
                         model=compile_artifact("pair-classification"))
    assert rc == 2 and "needs one of ('text-classification',)" in err


def test_torch_cuda_artifact_on_the_cpu_gives_the_onnx_intents(spark, compile_artifact, queries, tmp_path, capsys):
    """The GPU backend's artifact through the intent job on this machine's CPU (`--device cpu`)."""
    queries.to_parquet(tmp_path / "q.parquet")
    outs = {}
    for backend, model, extra in (("onnx", compile_artifact("text-classification"), {}),
                                  ("torch-cuda", compile_artifact("text-classification", "torch-cuda", precision="bf16"),
                                   {"device": "cpu"})):
        rc, summary, err = run_job(main, capsys, input=tmp_path / "q.parquet", output=tmp_path / backend, model=model,
                                   run_date="2026-02-07", backend=backend, max_invalid_fraction=0.1, **extra)
        assert rc == 0 and summary["backend"] == backend, err
        outs[backend] = read_partition(tmp_path / backend, "2026-02-07").sort_values("query_id").reset_index(drop=True)
    got, want = outs["torch-cuda"], outs["onnx"]
    assert (got.status == want.status).all() and (got.intent.fillna("") == want.intent.fillna("")).all()
    np.testing.assert_allclose(got.confidence.fillna(-1), want.confidence.fillna(-1), atol=0.02)
