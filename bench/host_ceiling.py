"""The host ceiling: how fast the jobs move rows when the model costs nothing.

On a GPU or a NeuronCore the model runs 10-100x faster than on these CPUs, so the host side of
the job (read, Arrow, validation, tokenization, batching and padding, scatter and output frame,
write) sets the speed. This section runs both jobs, unchanged, with zero-cost artifacts
(bench/null_artifact.py) on the generator's pairs and queries, and measures in the same run:

- each job's rows/s per core,
- the plain-tokenization baseline: the artifact's tokenizer, `encode_batch`, one thread, every
  text (both sides of every pair; every query), rows/s,
- the time split of each job's scoring wall time: read + Arrow and write from pass-through jobs
  with the same plan, tokenization and engine from the job's own metrics, the rest of the
  worker's time divided between validation, batching and padding, and scatter and output frame
  in the proportions a bench-side replay of the same workload on the same Arrow batches measures,
- a table of how many executor cores keep one accelerator busy, from published device rates.
"""
from __future__ import annotations

import math
import multiprocessing as mp
import os
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

FULL_ROWS = {"pairs": 100_000, "queries": 200_000}
QUICK_ROWS = {"pairs": 2_000, "queries": 4_000}
TARGET = 1.5  # null-engine job rows/s per core over plain tokenization (one thread)
ARROW_BATCH_ROWS = 4096  # the jobs' --arrow-batch-rows default (jobs/cli.py)
REPLAY_BATCHES = 6  # Arrow batches the bench-side replay times, per job
# Larger Arrow batches for accelerators: more repeated texts fall in one batch (each distinct
# text is tokenized once per batch), and the device gets longer runs of work per batch.
ACCELERATOR_ARROW_ROWS = 16384

# Published device rates for a BERT-base at 128 tokens per sequence, and the vCPUs an executor
# gets per device on the usual instances. Quoted from the sources named, not measured here.
DEVICES = (
    {"device": "NVIDIA A100, TensorRT fp16", "sequences_per_second": 7_900,
     "source": "NVIDIA TensorRT demo/BERT README, BERT-Base inference at sequence length 128",
     "vcpus_per_device": "p4d.24xlarge: 12"},
    {"device": "Inferentia2 (inf2.xlarge, 2 NeuronCores)", "sequences_per_second": 2_700,
     "source": "AWS Neuron documentation, Inf2 inference performance, BERT base",
     "vcpus_per_device": "inf2.xlarge: 4"},
)
PUBLISHED_SEQ_LEN = 128  # the sequence length of the published rates
VCPUS_PER_GPU = "g5.xlarge 4, g5.2xlarge 8, inf2.xlarge 4, p4d 12, p5 about 24"


# ---------------------------------------------------------------- plain tokenization

def _tokenize_once(tokenizer_json: str, max_seq_len: int, texts: list[str], out) -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tokenizer_json)
    tok.no_padding()
    tok.enable_truncation(max_seq_len, strategy="longest_first")
    tok.encode_batch(texts[:64])  # first call allocates
    t0 = time.perf_counter()
    tok.encode_batch(texts)
    out.put(time.perf_counter() - t0)


def plain_tokenization_seconds(tokenizer_json: Path, max_seq_len: int, texts: list[str]) -> float:
    """`encode_batch` over `texts` on one thread, in a fresh process (Rayon's pool is sized once
    per process, so the one-thread setting must be there before the tokenizer first runs)."""
    ctx = mp.get_context("spawn")
    saved = {k: os.environ.get(k) for k in ("RAYON_NUM_THREADS", "TOKENIZERS_PARALLELISM")}
    os.environ.update(RAYON_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    try:
        out = ctx.Queue()
        proc = ctx.Process(target=_tokenize_once, args=(str(tokenizer_json), max_seq_len, texts, out))
        proc.start()
        seconds = out.get(timeout=1800)
        proc.join()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return seconds


# ---------------------------------------------------------------- bench-side replay

def replay(artifact: Path, workload, frame: pd.DataFrame, cores: int, batch_tokens: int) -> dict:
    """The job's worker code on the job's Arrow batches, in this process, phase by phase.

    The frame is dealt to `cores` shares like the job's repartition and cut into Arrow batches
    of the job's size; the first REPLAY_BATCHES of them are timed. Tokenization, the engine and
    batching and padding (the rest of udfs/execute.py's run_encoded) come from the counters the
    worker keeps for the run summary (RunStats); validation is the rest of `prepare`, scatter
    and output frame the rest of `finish`."""
    from engines.registry import engine_class
    from engines.store import open_artifact
    from udfs.runtime import Runtime
    from udfs.tokenize import TextEncoder
    from udfs.contract import ID_COUNT

    manifest = open_artifact(artifact)
    engine = engine_class("onnx")(artifact, manifest, threads=1).load()
    runtime = Runtime(manifest, engine, TextEncoder(artifact / "tokenizer" / "tokenizer.json", manifest.max_seq_len))
    batches = []
    for p in range(cores):
        share = frame.iloc[p::cores]
        batches += [share.iloc[i:i + ARROW_BATCH_ROWS] for i in range(0, len(share), ARROW_BATCH_ROWS)]
    batches = [b.reset_index(drop=True).assign(**{ID_COUNT: np.nan}) for b in batches[:REPLAY_BATCHES]]
    seconds = dict.fromkeys(("prepare", "finish", "tokenize", "run_encoded", "engine"), 0.0)
    sent = {"sequences": 0, "real_tokens": 0}  # what the engine is sent
    for batch in batches:
        t0 = time.perf_counter()
        prepared = workload.prepare(runtime, batch)
        t1 = time.perf_counter()
        _, scored = workload.finish(runtime, prepared, batch_tokens)
        seconds["finish"] += time.perf_counter() - t1
        seconds["prepare"] += t1 - t0
        stats = scored.stats  # the worker's own counters (udfs/execute.py RunStats)
        seconds["tokenize"] += stats.tokenize_seconds
        seconds["run_encoded"] += stats.run_seconds
        seconds["engine"] += stats.engine_seconds
        sent["sequences"] += stats.sequences
        sent["real_tokens"] += stats.real_tokens
    engine.close()
    s = seconds
    phases = {"validation": s["prepare"] - s["tokenize"], "tokenization": s["tokenize"],
              "batching_padding": s["run_encoded"] - s["engine"], "engine": s["engine"],
              "scatter_output": s["finish"] - s["run_encoded"]}
    rows = sum(len(b) for b in batches)
    total = sum(phases.values())
    return {"rows": rows, "arrow_batches": len(batches), "seconds": round(total, 3), **sent,
            "rows_per_second": round(rows / total, 1),
            "phases": {k: round(v, 4) for k, v in phases.items()},
            "fractions": {k: round(v / total, 4) for k, v in phases.items()}}


# ---------------------------------------------------------------- the section

def time_split(summary: dict, read_arrow: float, read_arrow_write: float, worker: dict, cores: int) -> dict:
    """The job's scoring wall seconds by phase; worker seconds are divided by the cores."""
    wall = summary["scoring_seconds"]
    tokenize = summary.get("tokenize_seconds", 0.0) / cores
    engine = summary["engine_seconds"] / cores
    rest = max(summary.get("udf_seconds", 0.0) / cores - tokenize - engine, 0.0)
    f = worker["phases"]
    others = f["validation"] + f["batching_padding"] + f["scatter_output"]
    share = (lambda k: rest * f[k] / others) if others > 0 else (lambda k: 0.0)
    split = {"read_arrow": read_arrow, "validation": share("validation"), "tokenization": tokenize,
             "batching_padding": share("batching_padding"), "engine": engine,
             "scatter_output": share("scatter_output"), "write": max(read_arrow_write - read_arrow, 0.0)}
    split["unaccounted"] = max(wall - sum(split.values()), 0.0)
    return {k: round(v, 3) for k, v in split.items()} | {
        "fractions": {k: round(v / wall, 4) for k, v in split.items()}}


def cores_per_device(jobs: list[dict]) -> list[dict]:
    """Executor cores that keep one device busy: the device's sequences/s, turned into the job's
    rows/s by the sequences each row sends to it, over the job's host rows/s per core. The
    published rates are for 128-token sequences; `cores_token_scaled` assumes instead that the
    device's time scales with the padded tokens of the job's own sequences (a device runs short
    sequences faster, though rarely in proportion), so the two bracket the need."""
    rows = []
    for d in DEVICES:
        for j in jobs:
            device_rows = d["sequences_per_second"] / j["sequences_per_row"]
            scaled_rows = device_rows * PUBLISHED_SEQ_LEN / max(j["padded_tokens_per_sequence"], 1.0)
            rows.append({"device": d["device"], "source": d["source"], "vcpus_per_device": d["vcpus_per_device"],
                         "job": j["job"], "device_sequences_per_second": d["sequences_per_second"],
                         "sequences_per_row": j["sequences_per_row"], "device_rows_per_second": round(device_rows),
                         "host_rows_per_second_per_core": j["rows_per_second_per_core"],
                         "cores": math.ceil(device_rows / j["rows_per_second_per_core"]),
                         "padded_tokens_per_sequence": j["padded_tokens_per_sequence"],
                         "cores_token_scaled": math.ceil(scaled_rows / j["rows_per_second_per_core"])})
    return rows


def _job(kind: str, main, frame, texts: list[str], art: Path, work: Path, cores: int, spark, workload) -> dict:
    """One job with the zero-cost engine, with plain tokenization of the same texts just before
    and just after it (their mean is the baseline, so load on a shared machine hits both alike),
    its time split, and the same job with ACCELERATOR_ARROW_ROWS rows per Arrow batch, with
    the other --dedup level and, where the flash-tokenizer route is in use, without it."""
    from bench import job_bench
    from bench.harness import log
    from engines.store import open_artifact
    from udfs import flash_route
    from udfs.tokenize import TextEncoder

    rows, tokenizer, max_seq_len = len(frame), art / "tokenizer" / "tokenizer.json", open_artifact(art).max_seq_len

    def baseline() -> float:
        log(f"host ceiling: plain tokenization of {len(texts):,} texts ({kind}), one thread")
        return plain_tokenization_seconds(tokenizer, max_seq_len, texts)

    # The session's first full-size run of this job's plan also pays for the JVM compiling its
    # operators (3-5 s of 15 s here): timed and reported, but the figures are the warm runs after
    # it, which every variant below then gets alike, whatever its order.
    log(f"host ceiling: {kind} job, zero-cost engine, {rows:,} rows, first run in this session")
    cold = job_bench.measured(main, frame=frame, work=work, name=f"host-{kind}", model=art, partitions=cores)
    before = baseline()
    log(f"host ceiling: {kind} job, zero-cost engine, {rows:,} rows")
    s = job_bench.measured(main, frame=frame, work=work, name=f"host-{kind}", model=art, partitions=cores)
    after = baseline()
    log(f"host ceiling: {kind} job, zero-cost engine, {ACCELERATOR_ARROW_ROWS} rows per Arrow batch")
    big = job_bench.measured(main, frame=frame, work=work, name=f"host-{kind}-arrow", model=art, partitions=cores,
                             extra=["--arrow-batch-rows", str(ACCELERATOR_ARROW_ROWS)])
    level = s["dedup"]["level"]
    other = "batch" if level == "run" else "run"
    log(f"host ceiling: {kind} job, zero-cost engine, --dedup {other} (the default here is {level})")
    alt = job_bench.measured(main, frame=frame, work=work, name=f"host-{kind}-{other}", model=art, partitions=cores,
                             extra=["--dedup", other])
    route = TextEncoder(tokenizer, max_seq_len).single_route  # what the workers, in this venv, chose
    without = None
    if route.startswith("flash_tokenizer"):
        log(f"host ceiling: {kind} job, zero-cost engine, tokenizers alone ({flash_route.ENV}=0)")
        with _worker_env(spark, flash_route.ENV, "0"):
            without = job_bench.measured(main, frame=frame, work=work, name=f"host-{kind}-tokenizers", model=art,
                                         partitions=cores)
    data = work / f"host-{kind}.parquet"
    read_arrow = job_bench.passthrough_seconds(spark, input=data, output=None, workload=workload, partitions=cores)
    read_arrow_write = job_bench.passthrough_seconds(spark, input=data, output=work / f"host-{kind}-passthrough",
                                                     workload=workload, partitions=cores)
    log(f"host ceiling: {kind} worker phases (bench-side replay)")
    worker = replay(art, workload, frame, cores, s["options"]["batch_tokens"])
    base = (before + after) / 2
    baseline_rate = rows / base

    def rates(summary: dict) -> dict:
        return {"scoring_seconds": summary["scoring_seconds"], "rows_per_second": round(rows / summary["scoring_seconds"], 1),
                **_per_core(rows, summary["scoring_seconds"], cores, baseline_rate),
                "sequences_per_row": _sequences_per_row(summary, worker, rows)}

    return {"job": "duplicates" if kind == "pairs" else "query_intent", "rows": rows,
            "texts_tokenized_by_baseline": len(texts), **rates(s),
            "plain_tokenization_seconds": [round(before, 3), round(after, 3)],
            "plain_tokenization_rows_per_second": round(baseline_rate, 1), "target": TARGET,
            "met": bool(rows / s["scoring_seconds"] / cores / baseline_rate >= TARGET),
            "real_tokens": s["real_tokens"], "padded_tokens": s["padded_tokens"],
            "padded_tokens_per_sequence": round(worker["real_tokens"] / worker["sequences"]
                                                / (s["padding_efficiency"] or 1.0), 1),
            "padding_efficiency": s["padding_efficiency"], "engine_seconds": s["engine_seconds"],
            "tokenize_seconds": s["tokenize_seconds"], "udf_seconds": s["udf_seconds"],
            "options": s["options"], "time_split": time_split(s, read_arrow, read_arrow_write, worker, cores),
            "worker_replay": worker, "accelerator_arrow_batch": {"arrow_batch_rows": ACCELERATOR_ARROW_ROWS, **rates(big)},
            "passthrough": {"seconds": round(read_arrow_write, 3), **_per_core(rows, read_arrow_write, cores, baseline_rate)},
            "first_run": rates(cold), "dedup": level, "other_dedup": {"dedup": other, **rates(alt)},
            "single_text_route": route,
            **({"tokenizers_alone": rates(without)} if without else {})}


@contextmanager
def _worker_env(spark, name: str, value: str):
    """`name=value` in the Python workers of the jobs run inside: pyspark hands each UDF the
    SparkContext's `environment`, and keeps a separate worker pool per environment."""
    env = spark.sparkContext.environment
    env[name] = value
    try:
        yield
    finally:
        del env[name]


def _per_core(rows: int, seconds: float, cores: int, baseline_rate: float) -> dict:
    per_core = rows / seconds / cores
    return {"rows_per_second_per_core": round(per_core, 1), "vs_plain_tokenization": round(per_core / baseline_rate, 3)}


def _sequences_per_row(summary: dict, worker: dict, rows: int) -> float:
    """Sequences the engine runs per input row: the job's real tokens over the mean real tokens
    of a sequence in the replay, so whatever the job deduplicates is counted as the job did it."""
    tokens_per_sequence = worker["real_tokens"] / worker["sequences"]
    return round(summary["real_tokens"] / tokens_per_sequence / rows, 3)


def section(spark, *, fp32: Path, intent: Path, work: Path, cores: int, quick: bool) -> dict:
    from bench import null_artifact
    from bench.synthetic import datasets
    from bench.harness import close_meta, machine_meta, side_texts
    from jobs import duplicates, query_intent
    from udfs.workloads import Duplicates, QueryIntent

    n = QUICK_ROWS if quick else FULL_ROWS
    started = time.time()
    meta = machine_meta(quick=quick, cores=cores, arrow_batch_rows=ARROW_BATCH_ROWS)
    art_root = fp32.parent
    null_dup = null_artifact.build(fp32, art_root / f"{fp32.name}-null")
    null_intent = null_artifact.build(intent, art_root / f"{intent.name}-null")
    pairs = datasets.product_pairs(n["pairs"], seed=7).drop(columns=["label"])
    queries = datasets.search_queries(n["queries"], seed=11).drop(columns=["intent"])
    left, right = side_texts(pairs)
    jobs = []
    for kind, main, frame, texts, art, workload in (
            ("pairs", duplicates.main, pairs, left + right, null_dup, Duplicates()),
            ("queries", query_intent.main, queries, queries["query"].tolist(), null_intent, QueryIntent())):
        jobs.append(_job(kind, main, frame, texts, art, work, cores, spark, workload))
    close_meta(meta, started)
    return {**meta, "artifacts": {"duplicates": str(null_dup), "query_intent": str(null_intent),
                                  "graph": null_artifact.GRAPH},
            "jobs": jobs, "cores_per_device": cores_per_device(jobs), "vcpus_per_device_on_ec2": VCPUS_PER_GPU}
