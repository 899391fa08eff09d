"""What one worker holds per (artifact, backend, device): the manifest, the loaded engine and
the tokenizer. Built once per worker through the cache, never per batch."""
from __future__ import annotations

import dataclasses
import os
import sys

from engines.artifact import Manifest, open_artifact
from engines.base import Device, Engine
from engines.errors import ArtifactError
from engines.registry import engine_class
from engines.store import localize
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


@dataclasses.dataclass
class Runtime:
    manifest: Manifest
    engine: Engine
    encoder: TextEncoder

    def close(self) -> None:
        self.engine.close()


def load_runtime(spec: ScorerSpec, device: Device, threads: int) -> Runtime:
    # Tokenizer threads follow the task's CPU share too; set before the tokenizer first runs.
    os.environ.setdefault("RAYON_NUM_THREADS", str(threads))
    folder = localize(spec.artifact)
    manifest = open_artifact(folder)
    if manifest.digest != spec.digest:
        raise ArtifactError(f"artifact at {spec.artifact} changed after the job started "
                            f"(manifest digest {manifest.digest[:12]}… != {spec.digest[:12]}…)")
    engine = engine_class(spec.backend)(folder, manifest, device, threads).load()
    # Once per worker and engine: what actually runs (the executor's stderr log).
    extra = {k: getattr(engine, k) for k in ("plan_source", "visible_cores") if getattr(engine, k, None)}
    print(f"accel-scoring: loaded {manifest.model_id} on backend {spec.backend}, device {device}, "
          f"in {engine.load_seconds:.1f}s {extra or ''}".rstrip(), file=sys.stderr, flush=True)
    encoder = TextEncoder(folder / "tokenizer" / "tokenizer.json", spec.max_seq_len)
    return Runtime(manifest, engine, encoder)
