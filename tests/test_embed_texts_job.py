"""The embeddings job (jobs/embed_texts.py): the third workload on the one contract
(udfs/contract.py), on a tiny random bi-encoder."""
import numpy as np
import pandas as pd
import pytest

from jobs import duplicates
from udfs.workloads import Duplicates
from jobs.embed_texts import main
from tests.jobhelpers import pairs_frame, read_partition, run_job

pytestmark = pytest.mark.spark

TEXTS = ["Apple phone model 12", "Sony tv 55 inch", "Lego set 4 bricks", "Nike shoes size 10"]


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    rows = [{"id": f"t{i}", "text": TEXTS[i % 4] + (" refurbished" if i % 5 == 0 else "")} for i in range(60)]
    rows += [{"id": "null", "text": None}, {"id": "blank", "text": " \u200b "},
             {"id": "long", "text": "cheap " * 5_000}, {"id": "t1", "text": "duplicate id"}]
    path = tmp_path_factory.mktemp("embed") / "texts.parquet"
    frame = pd.DataFrame(rows)
    frame.to_parquet(path)
    return path, frame


@pytest.fixture(scope="module")
def embedder(compile_artifact):
    return compile_artifact("embedding")


def vectors(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    return {i: np.asarray(v, dtype=np.float32) for i, v in zip(frame.id, frame.embedding) if v is not None}


def test_contract_vectors_and_bad_rows_on_both_plans(spark, embedder, texts, tmp_path, capsys):
    path, frame = texts
    results = {}
    for dedup in ("run", "batch"):
        rc, summary, _ = run_job(main, capsys, input=path, output=tmp_path / dedup, model=embedder,
                                 run_date="2026-04-01", dedup=dedup, max_invalid_fraction=0.2)
        res = read_partition(tmp_path / dedup, "2026-04-01")
        assert rc == 0 and sorted(res.id) == sorted(frame.id) and summary["dedup"]["level"] == dedup
        assert list(res.columns) == ["id", "embedding", "dim", "model", "status", "error", "truncated"]
        results[dedup] = res.set_index("id", drop=False)
    res = results["run"]
    ok = res[res.status == "ok"]
    assert len(ok) == 60 - 1 + 1  # t1 clashes with the extra t1; "long" is embedded, truncated
    width = ok.dim.iloc[0]
    assert width > 0 and (ok.dim == width).all() and ok.embedding.map(len).eq(width).all()
    assert ok.embedding.map(lambda v: abs(np.linalg.norm(v) - 1.0) < 1e-4).all()  # the graph L2-normalises
    assert bool(res.loc["long", "truncated"]) and not ok.drop(index="long").truncated.any()
    assert res.loc["null", "error"].startswith("null_text") and res.loc["blank", "error"].startswith("blank_text")
    assert res[res.id == "t1"].error.str.startswith("duplicate_id").all()
    bad = res[res.status != "ok"]
    assert bad.embedding.isna().all() and bad.dim.isna().all()
    # the same text, the same vector; different texts, different vectors
    same = ok[ok.id.isin(["t2", "t6", "t14"])].embedding  # "Lego set 4 bricks" three times
    assert all(np.array_equal(same.iloc[0], v) for v in same)
    assert not np.allclose(ok.loc["t2", "embedding"], ok.loc["t3", "embedding"])
    # the two plans give the same rows: each text's vector, status and flags
    columns = ["id", "status", "error", "dim", "truncated", "model"]
    rows = [r.reset_index(drop=True)[columns].sort_values(["id", "error"]).astype(object) for r in results.values()]
    plain = [r.where(r.notna(), None).values.tolist() for r in rows]
    assert plain[0] == plain[1]
    run_vectors, batch_vectors = vectors(res), vectors(results["batch"])
    assert run_vectors.keys() == batch_vectors.keys()
    for i, v in run_vectors.items():
        np.testing.assert_allclose(v, batch_vectors[i], rtol=0, atol=1e-6)


def test_a_duplicates_runs_cache_serves_the_embeddings_job(spark, embedder, tmp_path, capsys):
    """A bi-encoder side and a text to embed are the same unit (same key): what the duplicates
    job cached, the embeddings job reads without loading an engine, and the other way round."""
    pairs = pairs_frame(40, seed=3)
    pairs.to_parquet(tmp_path / "pairs.parquet")
    cache = tmp_path / "cache"
    rc, first, _ = run_job(duplicates.main, capsys, input=tmp_path / "pairs.parquet", output=tmp_path / "dups",
                           model=embedder, run_date="2026-04-02", cache=cache)
    assert rc == 0 and first["cache"]["entries_added"] > 0
    sides = Duplicates()
    texts = pd.unique(pd.concat([sides.side(pairs, "left"), sides.side(pairs, "right")]))
    pd.DataFrame({"id": [f"x{i}" for i in range(len(texts))], "text": texts}).to_parquet(tmp_path / "texts.parquet")
    rc, summary, _ = run_job(main, capsys, input=tmp_path / "texts.parquet", output=tmp_path / "emb", model=embedder,
                             run_date="2026-04-02", cache=cache)
    assert rc == 0 and summary["ok"] == len(texts)
    assert summary["cache"]["hits"] == len(texts) and summary["cache"]["texts_encoded"] == 0
    assert summary["engine_loads"] == 0
