"""What an environment archive holds: read once from the venv-pack tarball, kept next to it.

A step's ``--backend`` needs libraries in the executors' Python, and the archive is the only
place that says whether they are there. Its member names say it (``lib/python3.11/
site-packages/torch/``, ``…/tensorrt_cu12-10.16.1.11.dist-info/``), but reading them means
decompressing gigabytes, and a staged archive is on S3. So packaging writes what it read into
``accel-scoring-env.json`` beside the archive, with the archive's sha256: ``stage`` uploads
both, ``add-step`` reads the small one and trusts it only when that sha256 is the staged
archive's (``emr.s3`` records it on upload). A local archive whose manifest is missing or
stale is read again (``load``).

``python -m emr.envinfo ARCHIVE`` writes the manifest (the AL2023 container does, after
venv-pack).
"""

from __future__ import annotations

import dataclasses
import email.parser
import json
import posixpath
import re
import sys
import tarfile
from pathlib import Path
from typing import Any, Iterable

from emr import gpu_envs
from emr import layout as L
from emr.errors import EmrError
from emr.s3 import SHA256_METADATA, head, read_bytes
from engines.artifact import sha256_file

# The import names each backend's engine loads in the executors' Python (engines/*.py).
BACKEND_MODULES = {
    "torch": ("torch",),
    "tensorrt": ("torch", "tensorrt"),
    "torch-cuda": ("torch",),  # and a CUDA build of it (``runs_on_cuda``, ``EnvInfo.cpu_only_torch``)
    "neuronx": ("torch_neuronx",),
    "neuron": ("torch_neuron",),
}
_SITE = re.compile(r"^lib/python(\d+\.\d+)/site-packages/([^/]+)")
_DIST_INFO = re.compile(r"^(.+?)-([^-]+)\.dist-info$")
_CUDA_DIST = re.compile(r"-cu(\d+)(?:-|$)")  # nvidia-cudnn-cu12, tensorrt-cu12-libs
_PROJECT_METADATA = re.compile(r"^lib/python[\d.]+/site-packages/accel_scoring-[^/]+\.dist-info/METADATA$")


def normalize(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclasses.dataclass(frozen=True)
class EnvInfo:
    """The facts about one archive that the checks need."""

    python: str | None  # "3.11", from lib/python3.11/site-packages
    interpreter: str | None  # where bin/python's links end: the base interpreter on the nodes
    modules: tuple[str, ...]  # top-level import names in site-packages
    distributions: dict[str, str]  # normalized name -> version
    # The installed project's pyspark specifiers, one per Spark extra (`spark`: 3.5, `spark4`: 4.0):
    # a release whose Spark any of them admits can run it.
    spark_requirements: tuple[str, ...]
    archive_sha256: str
    archive_size: int

    def missing_for(self, backend: str) -> list[str]:
        """The modules ``backend`` imports that this environment lacks."""
        return [m for m in BACKEND_MODULES.get(backend, ()) if m not in self.modules]

    def version(self, *names: str) -> str | None:
        """The version of the first of ``names`` that is installed."""
        return next((self.distributions[n] for n in names if n in self.distributions), None)

    @property
    def cpu_only_torch(self) -> str | None:
        """The installed torch's version when it is PyTorch's CPU-only build (``2.13.0+cpu``)."""
        torch = self.distributions.get("torch")
        return torch if torch and torch.endswith("+cpu") else None

    @property
    def tensorrt_version(self) -> str | None:
        return self.version("tensorrt-cu12-bindings", "tensorrt-cu12", "tensorrt-cu13-bindings",
                            "tensorrt-cu13", "tensorrt")

    @property
    def cuda_majors(self) -> set[int]:
        """The CUDA major versions the installed wheels were built for (12 in cu12, cu126)."""
        majors = {int(m.group(1)) for name in self.distributions if (m := _CUDA_DIST.search(name))}
        torch_local = (self.distributions.get("torch") or "").partition("+")[2]
        if re.fullmatch(r"cu\d{3,}", torch_local):
            majors.add(int(torch_local[2:-1]))
        return majors

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EnvInfo":
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{**{k: v for k, v in d.items() if k in fields}, "modules": tuple(d["modules"]),
                      "spark_requirements": tuple(d.get("spark_requirements", ()))})


def manifest_path(archive: Path) -> Path:
    return archive.with_name(L.ENV_MANIFEST)


def _spark_requirements(metadata: bytes) -> tuple[str, ...]:
    message = email.parser.BytesParser().parsebytes(metadata, headersonly=True)
    found = []
    for line in message.get_all("Requires-Dist") or []:
        spec, _, marker = line.partition(";")
        name = re.match(r"[A-Za-z0-9_.-]+", spec.strip())
        if name and normalize(name.group(0)) == "pyspark" and "spark" in marker:
            found.append(spec.strip()[name.end():].strip(" ()"))
    return tuple(f for f in found if f)


def _link_target(links: dict[str, str], start: str) -> str | None:
    """Follow symlinks inside the archive from ``start`` until one leaves it (an absolute path)."""
    path, seen = start, set()
    while path in links and path not in seen:
        seen.add(path)
        target = links[path]
        if target.startswith("/"):
            return target
        path = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    return None


def describe(archive: Path) -> EnvInfo:
    """Read ``archive``'s member names (one pass; gigabytes for a CUDA stack)."""
    python, top, links, spark = None, set(), {}, ()
    try:
        with tarfile.open(archive, "r|*") as tar:
            for member in tar:
                name = member.name.removeprefix("./")
                if member.issym():
                    links[name] = member.linkname
                if _PROJECT_METADATA.match(name) and member.isfile():
                    spark = _spark_requirements(tar.extractfile(member).read())
                match = _SITE.match(name)
                if match:
                    python = match.group(1)
                    top.add(match.group(2))
    except (OSError, tarfile.TarError) as exc:
        raise EmrError(f"cannot read the environment archive {archive}: {exc}", exit_code=2) from exc
    dists = {normalize(m.group(1)): m.group(2) for t in top if (m := _DIST_INFO.match(t))}
    modules = {t.split(".")[0] for t in top
               if not t.endswith((".dist-info", ".egg-info", ".pth", ".data")) and t != "__pycache__"}
    return EnvInfo(python=python, interpreter=_link_target(links, "bin/python"),
                   modules=tuple(sorted(modules)), distributions=dict(sorted(dists.items())),
                   spark_requirements=spark, archive_sha256=sha256_file(archive),
                   archive_size=archive.stat().st_size)


def write_manifest(archive: Path) -> EnvInfo:
    """Describe ``archive`` and write ``accel-scoring-env.json`` beside it."""
    info = describe(archive)
    manifest_path(archive).write_text(json.dumps(info.to_dict(), indent=2, sort_keys=True) + "\n")
    return info


def load(archive: Path) -> EnvInfo:
    """The manifest beside ``archive`` when it describes this very file, else the archive read again."""
    if not archive.is_file():
        raise EmrError(f"no environment archive at {archive} (build it with `make package` or "
                       "`make package-gpu`)", exit_code=2)
    try:
        info = EnvInfo.from_dict(json.loads(manifest_path(archive).read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return describe(archive)
    if info.archive_size == archive.stat().st_size and info.archive_sha256 == sha256_file(archive):
        return info
    return describe(archive)


def staged(s3: Any, layout: L.Layout, archive_head: dict[str, Any]) -> EnvInfo | None:
    """The staged archive's manifest, or None when none was staged.

    Raises:
        EmrError: the staged manifest describes another archive than the one staged.
    """
    uri = layout.env_manifest
    if head(s3, uri) is None:
        return None
    try:
        info = EnvInfo.from_dict(json.loads(read_bytes(s3, uri)))
    except (ValueError, KeyError, TypeError) as exc:
        raise EmrError(f"{uri} is not an environment manifest ({exc}); stage again") from exc
    if archive_head.get("Metadata", {}).get(SHA256_METADATA) != info.archive_sha256:
        raise EmrError(f"{uri} describes another archive than {layout.env_archive} (sha256 differs); "
                       "stage the archive and its manifest together with `python -m emr stage`")
    return info


def runs_on_cuda(backend: str) -> bool:
    """Whether ``backend``'s engine scores on an NVIDIA GPU, so its torch must be a CUDA build."""
    from engines.registry import backends, engine_class

    return backend in backends() and engine_class(backend).device_kind == "cuda"


def require_backend(info: EnvInfo | None, backend: str, where: str, label: str = "",
                    fix: str | None = None) -> None:
    """Refuse a ``--backend`` whose libraries the environment lacks, or cannot be shown to have.

    ``label`` names what chose the backend in the message (default ``--backend <backend>``);
    ``fix`` says how to get them into that environment (default: the archive to build,
    emr/gpu_envs.py). A GPU backend also needs torch's CUDA build, not its CPU-only one.
    """
    needed = BACKEND_MODULES.get(backend)
    if not needed:
        return
    label = label or f"--backend {backend}"
    env = gpu_envs.for_backend(backend)
    if env is None:
        fix = "run Neuron backends on EMR on EKS (`python -m emr eks-submit`)"
    elif fix is None:
        fix = f"build the {env.name} environment with `make {env.make_target}` and stage it"
    if info is None:
        raise EmrError(f"{label} needs {' and '.join(needed)} in the executors' Python, and "
                       f"{where} has no {L.ENV_MANIFEST} to show it has them; {fix}", exit_code=2)
    missing = info.missing_for(backend)
    if missing:
        raise EmrError(f"{label} needs {' and '.join(missing)}, which {where} lacks "
                       f"(it has Python {info.python}); {fix}", exit_code=2)
    if info.cpu_only_torch and runs_on_cuda(backend):
        raise EmrError(f"{label} needs a CUDA build of torch, and {where} has torch {info.cpu_only_torch}, "
                       f"PyTorch's CPU-only build; {fix}", exit_code=2)


def main(argv: Iterable[str] | None = None) -> int:
    for arg in list(sys.argv[1:] if argv is None else argv):
        info = write_manifest(Path(arg))
        print(f"{manifest_path(Path(arg))}: Python {info.python}, {len(info.distributions)} distributions")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
