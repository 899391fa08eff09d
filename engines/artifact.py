"""The model artifact: a folder of compiled files plus a manifest that pins them by sha256.

The Manifest is plain data: what the engines make of its backend is checked where an artifact
is opened (engines/store.py open_artifact), along with every listed file's digest, so a
half-copied or edited folder fails on the driver before any task starts.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from engines.errors import ArtifactError
from engines.tasks import TASKS, task as task_of

FORMAT_VERSION = 1
MANIFEST = "manifest.json"


@dataclasses.dataclass(frozen=True)
class Manifest:
    """What an engine and a scorer need to know about an artifact."""

    name: str
    version: str
    task: str
    backend: str
    max_seq_len: int
    buckets: tuple[tuple[int, int], ...]
    files: dict[str, str]
    precision: str = "fp32"
    labels: tuple[str, ...] = ()
    positive_label: int | None = None
    threshold: float = 0.5
    pooling: str | None = None
    target: dict[str, Any] = dataclasses.field(default_factory=dict)
    inputs: tuple[str, ...] = ("input_ids", "attention_mask", "token_type_ids")
    output: str = "logits"
    parity: dict[str, Any] = dataclasses.field(default_factory=dict)
    # Weights transformers initialised at random because the checkpoint lacked them (compile
    # --allow-untrained-head): the scores are noise. Empty for a trained model.
    untrained_head: tuple[str, ...] = ()
    created_with: dict[str, str] = dataclasses.field(default_factory=dict)
    source: dict[str, Any] = dataclasses.field(default_factory=dict)
    format_version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ArtifactError(f"manifest task {self.task!r} is not one of {TASKS}")
        if task_of(self.task).output == "logits" and not self.labels:
            raise ArtifactError(f"a {self.task} artifact needs labels; the manifest has none")
        if self.max_seq_len < 8:
            raise ArtifactError(f"max_seq_len must be >= 8, got {self.max_seq_len}")

    @property
    def model_id(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def digest(self) -> str:
        """Content key: identical artifacts share one engine per worker, edited ones never do."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["buckets"] = [list(b) for b in self.buckets]
        d["labels"] = list(self.labels)
        d["inputs"] = list(self.inputs)
        d["untrained_head"] = list(self.untrained_head)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Manifest":
        if d.get("format_version") != FORMAT_VERSION:
            raise ArtifactError(
                f"manifest format_version {d.get('format_version')!r} is not supported "
                f"(this build reads {FORMAT_VERSION}); recompile the artifact"
            )
        known = {f.name for f in dataclasses.fields(cls)}
        missing = [k for k in ("name", "version", "task", "backend", "max_seq_len", "files") if k not in d]
        if missing:
            raise ArtifactError(f"manifest lacks required keys {missing}")
        kw = {k: v for k, v in d.items() if k in known}
        kw["buckets"] = tuple(tuple(int(x) for x in b) for b in d.get("buckets", ()))
        kw["labels"] = tuple(d.get("labels", ()))
        kw["inputs"] = tuple(d.get("inputs", cls.inputs))
        kw["untrained_head"] = tuple(d.get("untrained_head", ()))
        return cls(**kw)

    def warn_untrained_head(self) -> None:
        """Say on stderr, once per job on the driver, that this artifact's scores are noise."""
        if self.untrained_head:
            print(f"warning: artifact {self.model_id} was compiled with --allow-untrained-head: its "
                  f"{self.task} head ({', '.join(self.untrained_head)}) was never trained and was initialised "
                  f"at random, so its scores and labels mean nothing", file=sys.stderr, flush=True)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_manifest(folder: Path, manifest: Manifest) -> Path:
    path = Path(folder) / MANIFEST
    path.write_text(json.dumps(manifest.to_dict(), indent=2, sort_keys=True) + "\n")
    return path


def read_manifest(folder: Path) -> Manifest:
    path = Path(folder) / MANIFEST
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ArtifactError(_not_an_artifact(Path(folder))) from None
    except OSError as e:
        raise ArtifactError(f"cannot read {path}: {e}") from None
    return parse_manifest(data, path)


def parse_manifest(data: bytes, where: object) -> Manifest:
    """A Manifest from manifest.json's bytes; `where` names the file in the error."""
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ArtifactError(f"{where} is not valid JSON: {e}") from None
    if not isinstance(raw, dict):
        raise ArtifactError(f"{where} holds {type(raw).__name__}, not a JSON object")
    try:
        return Manifest.from_dict(raw)
    except ArtifactError:
        raise
    except (TypeError, ValueError) as e:  # valid JSON, but a field of the wrong type
        raise ArtifactError(f"{where} has a malformed field: {e}") from None


def _not_an_artifact(folder: Path) -> str:
    if not folder.is_dir():
        return "no such folder"
    # The usual mistake: pointing a job at the Hugging Face folder instead of its compiled artifact.
    if (folder / "config.json").is_file():
        return (f"a Hugging Face model folder (config.json, no {MANIFEST}), not an artifact; compile it first: "
                f"python -m compiler --model {folder} --task {{{','.join(TASKS)}}} --out artifacts/{folder.name}")
    return f"{MANIFEST} not found: not an artifact folder (make one with python -m compiler)"


def verify_files(folder: Path, manifest: Manifest) -> None:
    """Raise ArtifactError naming every file that is missing or whose sha256 differs."""
    problems = []
    for rel, expected in sorted(manifest.files.items()):
        path = Path(folder) / rel
        if not path.is_file():
            problems.append(f"{rel}: missing")
        elif (actual := sha256_file(path)) != expected:
            problems.append(f"{rel}: sha256 {actual[:12]}… != manifest {expected[:12]}…")
    if problems:
        raise ArtifactError(f"artifact {folder} does not match its manifest: " + "; ".join(problems))
