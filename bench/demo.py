"""`make demo`: the main job on the embedded default, end to end, on local Spark.

Compiles the packaged all-MiniLM-L6-v2 to an ONNX embedding artifact (once), generates seeded
product pairs, runs `spark-submit jobs/duplicates.py`, and prints the run summary plus
precision/recall at the artifact's threshold against the generator's labels.
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

import pandas as pd

from bench.harness import ROOT, THRESHOLD, ensure_artifact, ensure_intent_artifact, minilm_compile_args, submit

# The demo runs on local[2]; a c7i.large has 2 vCPUs, so its price is what these runs would cost
# on EC2 (the summary's $ per million rows).
DEMO_INSTANCE_TYPE = "c7i.large"


def spark_submit(job: str, args: list[str]) -> dict:
    """The job as a user runs it, the job's own lines on the terminal; its run summary."""
    print("demo: ", end="", flush=True)
    summary = submit(job, [*args, "--instance-type", DEMO_INSTANCE_TYPE], driver_memory="4g", memory=False, echo=True)
    if summary.get("failed"):
        sys.exit(f"demo: {job} exited {summary['exit_code']}")
    return summary


def precision_recall(predicted: pd.Series, truth: pd.Series) -> tuple[float, float]:
    tp = int((predicted & truth).sum())
    return tp / max(int(predicted.sum()), 1), tp / max(int(truth.sum()), 1)


def duplicates_demo(rows: int, work: Path, run_date: str) -> None:
    from bench.synthetic import datasets

    model, why = ensure_artifact(ROOT / "artifacts" / "minilm-l6-embedding",
                                 minilm_compile_args("--backend", "onnx", max_seq_len=128))
    if model is None:
        sys.exit(f"demo: compile failed: {why}")
    pairs = datasets.product_pairs(rows, seed=7)
    data = work / "pairs.parquet"
    pairs.to_parquet(data)
    summary = spark_submit("duplicates.py", ["--input", str(data), "--output", str(work / "duplicates"),
                                             "--model", str(model), "--run-date", run_date, "--num-partitions", "2",
                                             "--arrow-batch-rows", "10000"])
    scores = pd.read_parquet(work / "duplicates" / f"run_date={run_date}")
    joined = scores.merge(pairs[["pair_id", "label"]], on="pair_id", validate="one_to_one")
    precision, recall = precision_recall(joined.is_duplicate.fillna(False).astype(bool), joined.label.astype(bool))
    print(f"demo: duplicates: {summary['rows_out']:,} pairs scored in {summary['scoring_seconds']:.0f} s "
          f"({summary['rows_per_second']:.1f} pairs/s); at cosine >= {THRESHOLD} precision {precision:.3f}, "
          f"recall {recall:.3f} against the generator's labels", flush=True)


def intent_demo(rows: int, work: Path, run_date: str) -> None:
    from bench.synthetic import datasets

    model = ensure_intent_artifact(ROOT / "artifacts" / "intent-centroid-minilm")
    heldout = datasets.load_intent_examples().query("split == 'heldout'").reset_index(drop=True)
    generated = datasets.search_queries(rows, seed=11)
    batch = pd.concat([generated, heldout.assign(query_id=[f"heldout-{i}" for i in heldout.index])[["query_id", "query", "intent"]]],
                      ignore_index=True)
    data = work / "queries.parquet"
    batch.to_parquet(data)
    summary = spark_submit("query_intent.py", ["--input", str(data), "--output", str(work / "intent"), "--model", str(model),
                                               "--run-date", run_date, "--num-partitions", "2", "--top-k", "3"])
    scores = pd.read_parquet(work / "intent" / f"run_date={run_date}").merge(
        batch[["query_id", "intent"]].rename(columns={"intent": "label"}), on="query_id", validate="one_to_one")
    held = scores[scores.query_id.str.startswith("heldout-")]
    gen = scores[~scores.query_id.str.startswith("heldout-")]
    print(f"demo: query_intent: {summary['rows_out']:,} queries classified in {summary['scoring_seconds']:.0f} s "
          f"({summary['rows_per_second']:.1f} queries/s); held-out accuracy "
          f"{float((held.intent == held.label).mean()):.3f} ({len(held)} hand-written queries), "
          f"{float((gen.intent == gen.label).mean()):.3f} on generated queries", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=10_000, help="product pairs to generate and score; default: 10000")
    p.add_argument("--queries", type=int, default=20_000, help="search queries to generate and classify; default: 20000")
    p.add_argument("--work", type=Path, default=ROOT / "out" / "demo", help="default: out/demo")
    p.add_argument("--run-date", default=dt.date.today().isoformat())
    args = p.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    duplicates_demo(args.rows, args.work, args.run_date)
    intent_demo(args.queries, args.work, args.run_date)
    return 0


if __name__ == "__main__":
    sys.exit(main())
