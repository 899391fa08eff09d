"""The real all-MiniLM-L6-v2 through compile and the duplicates job, against sentence-transformers."""
import numpy as np
import pytest

from jobs.duplicates import main
from tests.jobhelpers import pairs_frame, read_partition, run_job

pytestmark = [pytest.mark.slow, pytest.mark.spark]


@pytest.fixture(scope="module")
def minilm_artifact(minilm_dir, tmp_path_factory):
    from compiler import compile as compile_cli

    out = tmp_path_factory.mktemp("minilm") / "artifact"
    assert compile_cli.main(["--model", str(minilm_dir), "--task", "embedding", "--out", str(out),
                             "--name", "all-minilm-l6-v2", "--max-seq-len", "128", "--threshold", "0.8"]) == 0
    return out


def test_job_scores_match_sentence_transformers(spark, minilm_artifact, minilm_dir, tmp_path, capsys):
    st = pytest.importorskip("sentence_transformers")
    df = pairs_frame(120, seed=3)
    df.loc[0, "left_description"] = "word " * 20_000
    df.to_parquet(tmp_path / "in.parquet")
    rc, summary, _ = run_job(main, capsys, input=tmp_path / "in.parquet", output=tmp_path / "out", model=minilm_artifact,
                             run_date="2026-07-01", num_partitions=2)
    assert rc == 0 and summary["ok"] == 120 and summary["model"] == "all-minilm-l6-v2@1"
    res = read_partition(tmp_path / "out", "2026-07-01").set_index("pair_id").loc[df.pair_id]

    model = st.SentenceTransformer(str(minilm_dir), device="cpu")
    model.max_seq_length = 128
    side = lambda s: (df[f"{s}_title"] + " " + df[f"{s}_brand"] + " " + df[f"{s}_description"]).str.split().str.join(" ")
    a = model.encode(side("left").tolist(), normalize_embeddings=True)
    b = model.encode(side("right").tolist(), normalize_embeddings=True)
    expected = (a * b).sum(1)
    np.testing.assert_allclose(res.score.to_numpy(), expected, atol=1e-4)
    assert res.truncated.iloc[0] and not res.truncated.iloc[1:].any()
    assert (res.is_duplicate == (res.score >= 0.8)).all()
