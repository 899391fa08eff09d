"""The demo intent model: a nearest-centroid head on the real MiniLM, built from the hand-written examples."""
import pandas as pd
import pytest
import torch

from compiler import centroid
from engines.errors import ArtifactError
from engines.store import open_artifact

def test_centroids_are_label_means_in_sorted_label_order():
    emb = torch.tensor([[1.0, 0.0], [0.0, 1.0], [3.0, 0.0]])
    names, c = centroid.centroids_from(emb, ["b", "a", "b"])
    assert names == ["a", "b"]
    assert c.tolist() == [[0.0, 1.0], [2.0, 0.0]]

def test_read_examples_filters_split_and_checks_columns(tmp_path):
    path = tmp_path / "ex.csv"
    pd.DataFrame({"intent": ["x", "y"], "query": ["q1", "q2"], "split": ["build", "heldout"]}).to_csv(path, index=False)
    assert centroid.read_examples(path, "build") == (["q1"], ["x"])
    pd.DataFrame({"label": ["x"], "query": ["q"]}).to_csv(path, index=False)
    with pytest.raises(ArtifactError, match="missing \\['intent'\\]"):
        centroid.read_examples(path, None)

@pytest.mark.slow
@pytest.mark.spark
def test_demo_intent_model_classifies_heldout_queries(spark, minilm_dir, tmp_path, capsys):
    from bench.synthetic.datasets import load_intent_examples
    from jobs.query_intent import main
    from tests.jobhelpers import read_partition, run_job

    examples = tmp_path / "examples.csv"
    load_intent_examples().to_csv(examples, index=False)
    out = tmp_path / "intent-artifact"
    assert centroid.main(["--encoder", str(minilm_dir), "--examples", str(examples), "--out", str(out)]) == 0
    m = open_artifact(out)
    assert m.task == "text-classification" and len(m.labels) >= 12 and m.parity["passed"]

    heldout = load_intent_examples().query("split == 'heldout'").reset_index(drop=True)
    heldout.assign(query_id=heldout.index.astype(str)).to_parquet(tmp_path / "q.parquet")
    rc, summary, _ = run_job(main, capsys, input=tmp_path / "q.parquet", output=tmp_path / "o", model=out,
                             run_date="2026-08-01", top_k=3)
    res = read_partition(tmp_path / "o", "2026-08-01").astype({"query_id": int}).sort_values("query_id")
    assert rc == 0 and summary["ok"] == len(heldout) == len(res)
    accuracy = (res.intent.to_numpy() == heldout.intent.to_numpy()).mean()
    assert accuracy >= 0.75, accuracy  # measured 0.857 on the 98 held-out queries
