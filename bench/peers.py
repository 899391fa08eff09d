"""What others would write for the same job, on the same data, model and cores.

Each peer scores duplicates the straightforward way with transformers on PyTorch: a side's text
is its fields joined (as the job joins them), both sides are encoded with mean pooling and L2
normalisation in batches of 64 padded to their longest row, and the score is their cosine.
Torch gets one thread per task, as the job's engine does.

- `predict_batch_udf`: Spark's own wrapper (pyspark.ml.functions), batch_size 64.
- iterator pandas UDF: one model load per task, 64-row chunks of each Arrow batch.
- Ray Data: `map_batches` with an actor class, one actor per core (bench/ray_peer.py, run in
  its own interpreter because Ray comes from a separate venv).
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

BATCH = 64
MAX_LEN = 256


class Encoder:
    """transformers AutoModel + tokenizer, mean pooling, L2 normalisation; one torch thread."""

    def __init__(self, model_dir: str, threads: int = 1):
        import torch
        from transformers import AutoModel, AutoTokenizer

        torch.set_num_threads(threads)
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModel.from_pretrained(model_dir).eval()

    def __call__(self, texts: list[str]) -> np.ndarray:
        torch = self.torch
        enc = self.tokenizer(texts, padding="longest", truncation=True, max_length=MAX_LEN, return_tensors="pt")
        with torch.inference_mode():
            hidden = self.model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1).numpy()

    def cosine(self, left: list[str], right: list[str]) -> np.ndarray:
        out = np.empty(len(left))
        for i in range(0, len(left), BATCH):
            a, b = self(left[i:i + BATCH]), self(right[i:i + BATCH])
            out[i:i + BATCH] = (a * b).sum(1)
        return out


def sides(spark_df, fields=("title", "brand", "description")):
    from pyspark.sql import functions as F

    def side(s):
        cols = [F.when(F.trim(F.col(f"{s}_{f}")) != "", F.trim(F.col(f"{s}_{f}"))) for f in fields]
        return F.concat_ws(" ", *cols)

    return spark_df.select("pair_id", side("left").alias("left"), side("right").alias("right"))


def predict_batch_peer(model_dir: str):
    from pyspark.ml.functions import predict_batch_udf
    from pyspark.sql.types import DoubleType

    def make_predict_fn():
        encoder = Encoder(model_dir)

        def predict(left: np.ndarray, right: np.ndarray) -> np.ndarray:
            a, b = encoder(left.tolist()), encoder(right.tolist())
            return (a * b).sum(1)

        return predict

    return predict_batch_udf(make_predict_fn, return_type=DoubleType(), batch_size=BATCH)


def iterator_peer(model_dir: str):
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("double")
    def score(batches: Iterator[tuple[pd.Series, pd.Series]]) -> Iterator[pd.Series]:
        encoder = Encoder(model_dir)
        for left, right in batches:
            yield pd.Series(encoder.cosine(left.tolist(), right.tolist()))

    return score


def run_spark_peer(spark, udf, *, input: Path, output: Path, partitions: int, warmup: Path) -> dict:
    """Warm-up on a few rows, then read -> repartition -> UDF -> write; seconds of the write."""
    def once(path: Path, out: Path) -> float:
        df = sides(spark.read.parquet(str(path))).repartition(partitions)
        scored = df.select("pair_id", udf("left", "right").alias("score"))
        t0 = time.perf_counter()
        scored.write.mode("overwrite").parquet(str(out))
        return time.perf_counter() - t0

    once(warmup, output.with_name(output.name + "-warmup"))
    seconds = once(input, output)
    return {"seconds": round(seconds, 3), "output_path": str(output)}


def run_ray_peer(python: Path, *, model_dir: str, input: Path, output: Path, cores: int, timeout: int) -> dict:
    """bench/ray_peer.py in the Ray venv; {'skipped': reason} when Ray is not installed."""
    if not Path(python).exists():
        return {"skipped": f"no Ray interpreter at {python} (make ray-venv installs ray[data] in its own venv)"}
    script = Path(__file__).with_name("ray_peer.py")
    env = dict(os.environ, RAY_DISABLE_USAGE_STATS="1", RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.run([str(python), str(script), "--model", model_dir, "--input", str(input), "--output",
                           str(output), "--cores", str(cores), "--batch", str(BATCH)],
                          capture_output=True, text=True, env=env, timeout=timeout)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"skipped": f"ray peer exited {proc.returncode}: {(proc.stderr or proc.stdout)[-600:]}"}
    return json.loads(lines[-1])


def padding_of(tokenizer, left: list[str], right: list[str], order: str = "arrival") -> dict:
    """Real and padded tokens of 64-row batches padded to their longest row, in arrival order."""
    real = padded = 0
    for texts in (left, right):
        lengths = np.array([len(e.ids) for e in tokenizer.encode_batch(texts)])
        for i in range(0, len(lengths), BATCH):
            chunk = lengths[i:i + BATCH]
            real += int(chunk.sum())
            padded += int(chunk.max()) * len(chunk)
    return {"real_tokens": real, "padded_tokens": padded, "padding_efficiency": round(real / padded, 4)}
