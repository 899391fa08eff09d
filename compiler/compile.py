"""Compile a Hugging Face model folder into a verified artifact.

    python -m compiler --model HF_DIR --task embedding --backend onnx --out artifacts/minilm
    python -m compiler --model HF_DIR --task pair-classification --backend tensorrt --out artifacts/pairs-trt
    python -m compiler --model HF_DIR --task pair-classification --backend neuronx --out artifacts/pairs-inf2
    python -m compiler --model HF_DIR --task embedding --precision int8 --out artifacts/minilm-int8

ONNX artifacts for the CPU get ONNX Runtime's BERT operator fusion when the model allows it
(`--optimize`, compiler/onnx_optimize.py). `--precision int8` (onnx) is opt-in, never a default: it
passes only if labels agree on >= 99% of scored rows and the p99 |score diff| is <= 0.02
(engines/parity.py); give it the job's own input with `--parity-data` (compiler/parity_data.py).

The backend's stage (compiler/stage.py) exports, optimises or converts, and checks parity
against the transformers model; then the manifest is written. An artifact
that fails parity is not written: the command exits 1 and the output folder is left untouched.
So is a classifier whose checkpoint lacks weights that transformers would initialise at random
(an encoder without its task head): parity compares the export with that same random model and
would pass. `--allow-untrained-head` writes it anyway for smoke tests and records it.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from compiler import parity_data
from engines import artifact, registry
from engines.errors import ArtifactError, EngineUnavailableError, ParityError
from jobs.cli import FORMATS, field_list
from udfs.workloads import Duplicates

DEFAULT_SEQS = (32, 64, 128, 256, 512)
TOKENS_PER_BUCKET = 4096
OUTPUT_NAMES = {"embedding": "sentence_embedding"}


def default_buckets(max_seq_len: int) -> list[tuple[int, int]]:
    """(batch, seq) shapes with a constant token budget; the last bucket is max_seq_len."""
    seqs = [s for s in DEFAULT_SEQS if s < max_seq_len] + [max_seq_len]
    return [(max(1, TOKENS_PER_BUCKET // s), s) for s in seqs]


def parse_buckets(text: str) -> list[tuple[int, int]]:
    """'64x64,32x128' -> [(64, 64), (32, 128)], sorted by sequence length."""
    try:
        buckets = [tuple(int(x) for x in item.lower().split("x")) for item in text.split(",") if item.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"buckets must look like 64x64,32x128; got {text!r}") from None
    if not buckets or any(len(b) != 2 or min(b) < 1 for b in buckets):
        raise argparse.ArgumentTypeError(f"buckets must look like 64x64,32x128; got {text!r}")
    return sorted(buckets, key=lambda b: b[1])


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {}
    for lib in ("torch", "transformers", "onnx", "onnxruntime", "tokenizers"):
        try:
            out[lib] = md.version(lib)
        except md.PackageNotFoundError:
            pass
    return out


def build_artifact(module, tokenizer_dir: Path, out: Path, *, task: str, backend: str, name: str,
                   version: str, max_seq_len: int, labels: list[str], buckets: list[tuple[int, int]] | None = None,
                   positive_label: int | None = None, threshold: float = 0.5, pooling: str | None = None,
                   source: dict | None = None, precision: str | None = None,
                   options: "accel_compile.Options | None" = None, optimize: str = "auto",
                   parity_rows: list | None = None, allow_untrained_head: bool = False) -> artifact.Manifest:
    """Export `module`, check parity against it, and write the artifact to `out`.

    Raises ParityError (and writes nothing to `out`) if the export disagrees with `module`, and
    ArtifactError if `module` has randomly initialised weights (compiler.export.Classifier's
    `untrained_weights`) unless `allow_untrained_head`, which records them in the manifest.
    Accelerated backends (tensorrt, neuronx, neuron) may record parity as not yet run
    (`passed: null` with the reason) when this machine lacks their hardware.
    """
    from transformers import AutoTokenizer

    from compiler import accel_compile
    from compiler.stage import CompileJob, stage_for
    from engines.registry import engine_class

    untrained = getattr(module, "untrained_weights", ())
    if untrained and not allow_untrained_head:
        raise ArtifactError(
            f"{tokenizer_dir} has no trained {task} head: transformers would initialise {', '.join(untrained)} at random "
            f"(missing from the checkpoint), so every score would be noise, and parity cannot tell (it compares the "
            f"export with that same random model). Compile a model fine-tuned for {task}, use --task embedding for a "
            f"sentence encoder, or pass --allow-untrained-head for a smoke test")
    precision = precision or engine_class(backend).precisions[0]
    registry.check_precision(backend, precision)
    stage = stage_for(backend)
    options = options or accel_compile.Options()

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    if not tokenizer.is_fast:
        raise ArtifactError(f"{tokenizer_dir} has no fast tokenizer (tokenizer.json); one is required")
    if task == "pair-classification" and positive_label is None:
        positive_label = len(labels) - 1
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        work.chmod(0o755)  # mkdtemp makes it private; executors may run as another user
        tokenizer.save_pretrained(work / "tokenizer")
        output = OUTPUT_NAMES.get(task, "logits")
        buckets = list(buckets or default_buckets(max_seq_len))
        job = CompileJob(module=module, work=work, backend=backend, task=task, output=output,
                         max_seq_len=max_seq_len, buckets=tuple(buckets), precision=precision, tokenizer=tokenizer,
                         options=options, optimize=optimize, threshold=threshold, positive_label=positive_label,
                         parity_rows=parity_rows)
        target = {**stage.export(job), **stage.convert(job)}
        versions = _versions()
        files = {str(p.relative_to(work)): artifact.sha256_file(p) for p in sorted(work.rglob("*")) if p.is_file()}
        manifest = artifact.Manifest(
            name=name, version=version, task=task, backend=backend, max_seq_len=max_seq_len,
            buckets=tuple(buckets), files=files, labels=tuple(labels), precision=precision,
            positive_label=positive_label, threshold=threshold, pooling=pooling if task == "embedding" else None,
            target=target, output=output, created_with=versions, source=source or {},
            untrained_head=tuple(untrained),
        )
        record, added = stage.validate(job, manifest)
        files = {**files, **{rel: artifact.sha256_file(work / rel) for rel in added}}
        if record["passed"] is False:
            raise ParityError(f"{backend} export of {name} failed parity against transformers: {json.dumps(record)}")
        manifest = dataclasses.replace(manifest, parity=record, files=files)
        artifact.write_manifest(work, manifest)
        if out.exists():
            shutil.rmtree(out)
        os.replace(work, out)
        return manifest
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _read_labels(path: Path) -> list[str]:
    text = Path(path).read_text()
    labels = json.loads(text) if text.lstrip().startswith("[") else [l.strip() for l in text.splitlines() if l.strip()]
    if not labels:
        raise argparse.ArgumentTypeError(f"{path} lists no labels")
    return [str(l) for l in labels]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m compiler", description=__doc__.split("\n\n")[0])
    req = p.add_argument_group("Required arguments")
    req.add_argument("--model", required=True, type=Path, help="Hugging Face model folder (config, weights, tokenizer)")
    req.add_argument("--task", required=True, choices=artifact.TASKS)
    req.add_argument("--out", required=True, type=Path,
                     help="artifact folder to write (an earlier artifact there is replaced; any other folder of files "
                          "is refused)")
    opt = p.add_argument_group("Optional arguments")
    engines = [registry.engine_class(b) for b in registry.backends()]
    opt.add_argument("--backend", default="onnx", choices=registry.backends(),
                     help=f"{', '.join(f'{e.backend} ({e.device_words})' for e in engines)}; default: onnx")
    opt.add_argument("--precision", default=None, choices=registry.precisions(),
                     help=f"one of the backend's {', '.join(f'{e.backend} {list(e.precisions)}' for e in engines)}; "
                          "default: the first; int8 (onnx, opt-in) is kept only if it passes the score parity gate")
    opt.add_argument("--optimize", choices=("auto", "fusion", "none"), default="auto",
                     help="onnx: ONNX Runtime BERT fusion; auto fuses when the model allows it, fusion insists; "
                          "default: auto")
    opt.add_argument("--parity-data", type=Path, default=None,
                     help="rows for the int8 gate: the job's own input (duplicates: pair_id and left_<field>/"
                          "right_<field> per --fields; intent: query), or columns left,right (pair tasks) or text; "
                          "default: built-in probe rows")
    opt.add_argument("--input-format", choices=FORMATS, default=None,
                     help="of --parity-data, as the jobs' flag; default: from the path's suffix, else parquet")
    opt.add_argument("--fields", type=field_list, default=",".join(Duplicates.fields),
                     help="--parity-data of the duplicates job: its --fields; default: title,brand,description")
    opt.add_argument("--build", action="store_true",
                     help="tensorrt: build the plan for this machine's GPU now, check it and ship it in the artifact; "
                          "default: executors build on first use")
    opt.add_argument("--neuron-target", default="inf2", help="neuronx: neuronx-cc --target (inf2, trn1, trn1n); "
                                                              "default: inf2")
    opt.add_argument("--max-seq-len", type=int, default=256, help="tokens per input (pair or text); default: 256")
    opt.add_argument("--buckets", type=parse_buckets, default=None,
                     help="(batch)x(seq) shapes, e.g. 64x64,32x128; default: 4096-token buckets up to --max-seq-len")
    opt.add_argument("--name", default=None, help="default: the model folder's name")
    opt.add_argument("--version", default="1", help="default: 1")
    opt.add_argument("--labels-file", type=Path, default=None, help="labels, one per line or a JSON list; default: config.id2label")
    opt.add_argument("--positive-label", type=int, default=None, help="pair-classification: index of the 'duplicate' class; default: last")
    opt.add_argument("--threshold", type=float, default=0.5, help="score >= threshold means duplicate; default: 0.5")
    opt.add_argument("--pooling", choices=("mean", "cls"), default="mean", help="embedding task; default: mean")
    opt.add_argument("--allow-untrained-head", action="store_true",
                     help="write a classifier whose head transformers initialises at random (the checkpoint lacks "
                          "it), for smoke tests only: the manifest records it and the jobs warn; default: refuse")
    return p


def replaceable(out: Path) -> str | None:
    """Why compile must not replace `out` (None when it may): the artifact it writes replaces the
    folder whole, so anything but an earlier artifact or an empty folder there would be lost."""
    if not out.exists():
        return None
    if not out.is_dir():
        return "is a file, not a folder: compile writes an artifact folder there"
    if (out / artifact.MANIFEST).is_file() or not any(out.iterdir()):
        return None
    return (f"holds files but no {artifact.MANIFEST}, so it is not an artifact compile would replace: "
            "give a new folder or an earlier artifact's")


def argv_without_out(argv: list[str] | None) -> list[str]:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--out" in argv:
        i = argv.index("--out")
        del argv[i:i + 2]
    return argv


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from compiler.export import load_reference

    if not (args.model / "config.json").is_file():
        print(f"error: {args.model} is not a Hugging Face model folder (no config.json)", file=sys.stderr)
        return 2
    if (problem := replaceable(args.out)) is not None:
        print(f"error: --out {args.out} {problem}", file=sys.stderr)
        return 2
    if not 8 <= args.max_seq_len <= 512:
        print(f"error: --max-seq-len must be between 8 and 512, got {args.max_seq_len}", file=sys.stderr)
        return 2
    try:
        if args.precision:
            registry.check_precision(args.backend, args.precision)
        if args.backend == "neuronx":
            from compiler.accel_compile import check_neuron_target

            check_neuron_target(args.neuron_target)
    except ArtifactError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from compiler.stage import building_backends

    if args.build and args.backend not in building_backends():
        print(f"error: --build only applies to --backend {' or '.join(building_backends())}", file=sys.stderr)
        return 2
    try:
        parity_rows = (parity_data.read(args.parity_data, args.task, args.input_format, args.fields)
                       if args.parity_data else None)
    except (OSError, ValueError) as e:
        print(f"error: --parity-data {args.parity_data}: {e}", file=sys.stderr)
        return 2
    module, labels = load_reference(args.model, args.task, args.pooling)
    if args.labels_file:
        file_labels = _read_labels(args.labels_file)
        if labels and len(file_labels) != len(labels):
            print(f"error: {args.labels_file} has {len(file_labels)} labels, the model outputs {len(labels)}", file=sys.stderr)
            return 2
        labels = file_labels
    from compiler.accel_compile import Options

    try:
        manifest = build_artifact(
            module, args.model, args.out, task=args.task, backend=args.backend, name=args.name or args.model.name,
            version=args.version, max_seq_len=args.max_seq_len, labels=labels, buckets=args.buckets,
            positive_label=args.positive_label, threshold=args.threshold, pooling=args.pooling,
            source={"model_dir": str(args.model.resolve()), "build_args": argv_without_out(argv)},
            precision=args.precision, options=Options(build=args.build, neuron_target=args.neuron_target),
            optimize=args.optimize, parity_rows=parity_rows,
            allow_untrained_head=args.allow_untrained_head,
        )
    except EngineUnavailableError as e:  # the backend's compiler or hardware is not on this machine
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (ParityError, ArtifactError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if manifest.untrained_head:
        print(f"warning: {args.out} has a randomly initialised head ({', '.join(manifest.untrained_head)}), "
              "recorded as untrained_head in its manifest", file=sys.stderr)
    print(json.dumps({"artifact": str(args.out), "model": manifest.model_id, "task": manifest.task,
                      "backend": manifest.backend, "parity": manifest.parity}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
