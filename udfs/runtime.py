"""What one worker holds per (artifact, backend, device): the manifest, the loaded engine and
the tokenizer. Built once per worker through the cache, never per batch.

An engine that refuses its artifact on this worker's hardware (engines.errors.ParityError: a
TensorRT plan or Neuron trace failing parity on this device, an int8 graph failing its gate on
this CPU's instruction set) never scores: the worker loads `--fallback-model` instead, or holds
a RefusedEngine, for which udfs/execute.py marks every row `error` with the refusal's reason.
"""
from __future__ import annotations

import dataclasses
import os

from engines.artifact import Manifest
from engines.base import Device, Engine, EngineSpec
from engines.errors import ArtifactError, ParityError
from engines.registry import engine_class
from engines.store import localize, open_artifact
from udfs import progress
from udfs.progress import ProgressAddress
from udfs.tokenize import TextEncoder


@dataclasses.dataclass(frozen=True)
class ScorerSpec:
    """Everything a worker needs, small and picklable; captured by the UDF closure."""

    artifact: str  # an artifact URI (engines.store): local folder, file:// or s3://
    digest: str  # the manifest digest the driver verified; workers refuse anything else
    backend: str
    batch_tokens: int
    max_seq_len: int
    device: str | None = None
    overlap: bool = False  # tokenize the next Arrow batch while the engine runs this one
    progress: ProgressAddress | None = None  # where the driver counts scored rows live
    fallback: str | None = None  # --fallback-model: the artifact URI scored where the engine refuses `artifact`
    fallback_digest: str | None = None


@dataclasses.dataclass
class Runtime:
    manifest: Manifest
    engine: Engine
    encoder: TextEncoder

    def close(self) -> None:
        self.engine.close()


class RefusedEngine:
    """Holds the place of an engine that refused its artifact on this worker: it scores nothing,
    and udfs/execute.py gives every row it is handed the `refused` reason."""

    pipeline_depth = 1

    def __init__(self, manifest: Manifest, reason: str):
        self.manifest, self.refused = manifest, reason

    @property
    def spec(self) -> EngineSpec:
        return EngineSpec(input_names=self.manifest.inputs, max_seq_len=self.manifest.max_seq_len)

    def close(self) -> None:
        pass


def load_runtime(spec: ScorerSpec, device: Device, threads: int) -> Runtime:
    # Tokenizer threads follow the task's CPU share too; set before the tokenizer first runs.
    os.environ.setdefault("RAYON_NUM_THREADS", str(threads))
    runtime = _load(spec, spec.artifact, spec.digest, device, threads)
    if isinstance(runtime.engine, RefusedEngine) and spec.fallback:
        runtime = _load(spec, spec.fallback, spec.fallback_digest, device, threads)
    return runtime


def _load(spec: ScorerSpec, uri: str, digest: str, device: Device, threads: int) -> Runtime:
    folder = localize(uri)
    manifest = open_artifact(folder)
    if manifest.digest != digest:
        raise ArtifactError(f"artifact at {uri} changed after the job started "
                            f"(manifest digest {manifest.digest[:12]}… != {digest[:12]}…)")
    encoder = TextEncoder(folder / "tokenizer" / "tokenizer.json", min(spec.max_seq_len, manifest.max_seq_len))
    try:
        engine = engine_class(spec.backend)(folder, manifest, device, threads).load()
    except ParityError as e:
        then = f"scoring with --fallback-model {spec.fallback}" if spec.fallback and uri != spec.fallback else \
            "every row it is given is marked error"
        progress.say(f"accel-scoring: refused {manifest.model_id} on backend {spec.backend}, device {device}: {e}; "
                     f"{then}")
        return Runtime(manifest, RefusedEngine(manifest, f"artifact_refused: {e}"), encoder)
    # Once per worker and engine: what actually runs (the executor's stderr log, or the local driver's).
    extra = {k: getattr(engine, k) for k in ("plan_source", "visible_cores", "cpu_gate") if getattr(engine, k, None)}
    progress.say(f"accel-scoring: loaded {manifest.model_id} on backend {spec.backend}, device {device}, "
                 f"in {engine.load_seconds:.1f}s {extra or ''}".rstrip())
    return Runtime(manifest, engine, encoder)
