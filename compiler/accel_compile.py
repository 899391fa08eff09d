"""The compile stages of the accelerated backends (compiler/stage.py): TensorRT build specs and Neuron traces.

- tensorrt: the fp32 `model.onnx` (checked against transformers on the CPU, and the CPU
  fallback), the graph in the build precision (`tensorrt/model.fp16.onnx`, checked with ONNX
  Runtime on the CPU where it can run it), and `tensorrt/build.json`: one optimisation profile
  per sequence bucket. The plan itself is built on the executor's GPU (or now, with `--build`).
- neuronx / neuron: one traced TorchScript per (batch, seq) bucket, `neuronx/b{B}_s{S}.pt`,
  compiled with the cast type explicit (`--auto-cast matmult --auto-cast-type bf16`; on Inf1
  `--fp32-cast matmult-bf16`).

Every accelerated artifact carries `parity/probes.npz` (probe inputs and transformers outputs),
so the engine checks itself on the hardware it lands on when parity could not run here.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import json
import shutil
import tempfile
from pathlib import Path

from compiler import onnx_precision
from compiler.stage import CompileJob, Stage
from engines import parity, registry, trt_build
from engines.errors import ArtifactError, EngineUnavailableError

NEURONX_TARGETS = ("inf2", "trn1", "trn1n")
# Targets neuronx-cc still knows but no supported inference runtime runs this project's torch-neuronx
# (PyTorch/XLA) artifacts on: "Neuron no longer supports PyTorch/XLA inference on Trn2 and Trn3
# starting with Neuron 2.34" (Neuron announcement announce-no-support-torch-xla-inference-trn, read
# 2026-12-03). Compiling for them would make an artifact nothing here can serve.
RETIRED_NEURONX_TARGETS = {
    "trn2": "Neuron 2.34 ended torch-neuronx (PyTorch/XLA) inference on Trn2 and Trn3, so a trn2 artifact has "
            "no supported runtime; compile for inf2 or trn1",
}


def check_neuron_target(target: str) -> str:
    """``target`` if neuronx-cc may compile for it here; an ``ArtifactError`` saying why not otherwise."""
    if target in RETIRED_NEURONX_TARGETS:
        raise ArtifactError(f"--neuron-target {target}: {RETIRED_NEURONX_TARGETS[target]}")
    if target not in NEURONX_TARGETS:
        raise ArtifactError(f"--neuron-target must be one of {NEURONX_TARGETS}, got {target!r}")
    return target


@dataclasses.dataclass(frozen=True)
class Options:
    build: bool = False  # tensorrt: build the plan for this machine's GPU now and ship it
    neuron_target: str = "inf2"  # neuronx --target
    workspace_mib: int = 4096
    max_tokens: int = trt_build.DEFAULT_MAX_TOKENS
    optimization_level: int = trt_build.BuildSpec.optimization_level  # bench/device_check.py: 2, to fit its time


def check_buckets(backend: str, buckets: list[tuple[int, int]], max_seq_len: int) -> None:
    """Static-shape engines load one compiled module per sequence length and run nothing longer."""
    seqs = [s for _, s in buckets]
    if registry.engine_class(backend).static_shapes:
        if len(set(seqs)) != len(seqs):
            raise ArtifactError(f"Neuron buckets need distinct sequence lengths, got {buckets}")
        if max(seqs) < max_seq_len:
            raise ArtifactError(f"the largest bucket (seq {max(seqs)}) must reach --max-seq-len {max_seq_len}: "
                                "longer rows would have no compiled shape")


# --------------------------------------------------------------------------- stages


class AcceleratedStage(Stage):
    """Shared by the accelerated stages: the probes every such artifact carries, so the engine can
    check itself on the hardware it lands on when parity could not run here."""

    def export(self, job: CompileJob) -> dict:
        check_buckets(job.backend, list(job.buckets), job.max_seq_len)
        batches = parity.probe_batches(job.tokenizer, job.task, job.max_seq_len)
        parity.save_probes(job.work / parity.PROBES_FILE, batches, parity.reference_outputs(job.module, batches))
        return {}


class TensorRTStage(AcceleratedStage):
    builds_here = True
    def export(self, job: CompileJob) -> dict:
        from compiler import export as onnx_export

        super().export(job)
        onnx_export.export_onnx(job.module, job.work / "model.onnx", job.output, job.max_seq_len)
        return {}

    def convert(self, job: CompileJob) -> dict:
        """The graph in the build precision and tensorrt/build.json; the plan is built on a GPU."""
        precision, options = job.precision, job.options
        graph = "model.onnx"
        if precision != "fp32":
            graph = f"tensorrt/model.{precision}.onnx"
            onnx_precision.convert_precision(job.work / "model.onnx", job.work / graph, precision)
        spec = trt_build.BuildSpec(onnx=graph, precision=precision,
                                   profiles=tuple(trt_build.profiles_for(job.buckets, job.max_seq_len,
                                                                         options.max_tokens)),
                                   workspace_mib=options.workspace_mib, max_tokens=options.max_tokens,
                                   optimization_level=options.optimization_level)
        (job.work / trt_build.BUILD_SPEC).parent.mkdir(parents=True, exist_ok=True)
        (job.work / trt_build.BUILD_SPEC).write_text(json.dumps(spec.to_dict(), indent=2, sort_keys=True) + "\n")
        return {"device": "cuda", "runtime": "tensorrt", "tensorrt_min": trt_build.TENSORRT_MIN,
                "tensorrt_below": trt_build.TENSORRT_BELOW,
                "min_compute_capability": list(trt_build.MIN_COMPUTE_CAPABILITY[precision]), "precision": precision,
                "opset": 18}

    def validate(self, job: CompileJob, manifest) -> tuple[dict, list[str]]:
        """The fp32 graph and the converted one on ONNX Runtime's CPU kernels; the plan itself on
        this GPU with `--build`, else on the executor's first build (`passed: None`)."""
        work, record = job.work, {}
        cpu = dataclasses.replace(manifest, backend=registry.CPU_FALLBACK)
        with registry.engine_class(registry.CPU_FALLBACK)(work, cpu) as engine:
            record["onnx_fp32"] = parity.check(job.module, engine, job.tokenizer, manifest.task, "fp32",
                                               manifest.max_seq_len)
        spec = trt_build.BuildSpec.read(work)
        if spec.onnx != "model.onnx":
            record[f"onnx_{spec.precision}_cpu"] = _cpu_check(work / spec.onnx, work, manifest)
        failed = [k for k, r in record.items() if r.get("passed") is False]
        if failed:
            return {**record, "passed": False, "failed": failed}, []
        if not job.options.build:
            return {**record, "passed": None, "skipped": "no GPU at compile time; checked on first build"}, []
        return _build_here(work, manifest, record)


class NeuronStage(AcceleratedStage):
    """One trace per (batch, seq) bucket with the engine's Neuron tracer; subclasses pick the
    compiler's arguments for their NeuronCore generation."""

    compiler: str  # the compiler's distribution, recorded in the target

    def compile_options(self, job: CompileJob) -> tuple[list[str], str, dict]:
        """(compiler arguments, instance family, extra trace keywords)."""
        raise NotImplementedError

    def finish(self, tracer, traced):
        """The traced module as it is saved."""
        return traced

    def convert(self, job: CompileJob) -> dict:
        import torch

        from compiler import export as onnx_export
        from engines.neuron import bucket_file

        engine = registry.engine_class(job.backend)
        try:
            tracer = importlib.import_module(engine.runtime_module)
        except ImportError as e:
            raise engine.missing_runtime(f"compile --backend {job.backend}", e) from None
        args, instance, extra = self.compile_options(job)
        workdir = Path(tempfile.mkdtemp(prefix="neuron-cc-"))
        try:
            for batch, seq in job.buckets:
                example = onnx_export.example_inputs(batch, seq)
                with torch.no_grad():
                    traced = tracer.trace(job.module, example, compiler_args=list(args),
                                          compiler_workdir=str(workdir / f"b{batch}_s{seq}"), **extra)
                path = job.work / bucket_file(engine.folder_name, batch, seq)
                path.parent.mkdir(parents=True, exist_ok=True)
                torch.jit.save(self.finish(tracer, traced), str(path))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return {"device": "neuron", "runtime": engine.distribution, "version": _dist_version(engine.distribution, tracer),
                "compiler": f"{self.compiler} {_dist_version(self.compiler)}", "instance": instance,
                "compiler_args": list(args), "traced_without_device": bool(extra.get("cpu_backend"))}

    def validate(self, job: CompileJob, manifest) -> tuple[dict, list[str]]:
        """The traces on this machine's NeuronCore; without one, on the executor's first load."""
        from engines.base import Device

        try:
            engine = registry.engine_class(manifest.backend)(job.work, manifest, Device("neuron")).load()
        except EngineUnavailableError as e:
            return {"passed": None, "skipped": f"no NeuronCore at compile time; checked on first load ({e})"}, []
        try:
            record = dict(engine.parity_record or {})
        finally:
            engine.close()
        record["where"] = "at compile time, on this machine's Neuron runtime"
        return record, []


class NeuronxStage(NeuronStage):
    """torch-neuronx (Inf2/Trn): the cast type explicit, dynamic batching applied before saving."""

    compiler = "neuronx-cc"

    def compile_options(self, job: CompileJob) -> tuple[list[str], str, dict]:
        from engines import hardware

        target = check_neuron_target(job.options.neuron_target)
        cast = (["--auto-cast", "none"] if job.precision == "fp32"
                else ["--auto-cast", "matmult", "--auto-cast-type", job.precision])
        extra = {} if hardware.neuron_device_present() else {"cpu_backend": True}  # trace on a CPU-only box
        return cast + ["--model-type", "transformer", "--target", target], target, extra

    def finish(self, tracer, traced):
        return tracer.dynamic_batch(traced)  # before saving, as the torch-neuronx docs apply it


class Inf1Stage(NeuronStage):
    """torch-neuron (Inf1): argmax-sensitive models keep relayouts exact (torch-neuron release
    notes, known issues); the trace itself batches dynamically."""

    compiler = "neuron-cc"

    def compile_options(self, job: CompileJob) -> tuple[list[str], str, dict]:
        args = ["--fp32-cast", f"matmult-{job.precision}", "--fast-math", "no-fast-relayout"]
        return args, "inf1", {"dynamic_batch_size": True}


def _dist_version(name: str, module=None) -> str:
    version = getattr(module, "__version__", None)
    if version:
        return str(version)
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


# --------------------------------------------------------------------------- parity helpers


def _cpu_check(graph: Path, work: Path, manifest) -> dict:
    """The reduced-precision graph on ONNX Runtime's CPU kernels: checks the conversion, not TensorRT."""
    import numpy as np
    import onnxruntime as ort

    try:
        session = ort.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - e.g. no CPU kernels for bf16
        return {"passed": None, "skipped": f"ONNX Runtime cannot run this graph on the CPU: {str(e)[:200]}"}
    names = {i.name for i in session.get_inputs()}
    batches, refs = parity.load_probes(work / parity.PROBES_FILE)
    gots = [session.run([manifest.output], {k: v for k, v in feed.items() if k in names})[0].astype(np.float32)
            for feed in batches]
    precision = trt_build.BuildSpec.read(work).precision
    record = parity.compare(refs, gots, manifest.task, precision)
    record["where"] = "ONNX Runtime CPU on the converted graph (TensorRT kernels are checked on the GPU)"
    return record


def _build_here(work: Path, manifest, record: dict) -> tuple[dict, list[str]]:
    from engines.base import Device
    from engines.tensorrt import TensorRTEngine

    cache = Path(tempfile.mkdtemp(prefix="trt-build-"))  # only this build's plans, to ship
    try:
        engine = TensorRTEngine(work, manifest, Device("cuda", "0"), plan_cache=cache).load()
        try:
            on_gpu = engine.parity_record
        finally:
            engine.close()
        plans = sorted(cache.glob("*.plan"))
        dest = work / trt_build.PLANS_DIR
        dest.mkdir(parents=True, exist_ok=True)
        added = []
        for plan in plans:
            shutil.copy2(plan, dest / plan.name)
            added.append(f"{trt_build.PLANS_DIR}/{plan.name}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {**record, **(on_gpu or {}), "tensorrt_gpu": on_gpu}, added
