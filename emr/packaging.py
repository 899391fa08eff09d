"""Build what Spark ships to the nodes: the wheel, a ``--py-files`` zip, a venv-pack archive.

``dist/accel_scoring-<version>-py3-none-any.whl``
    the project; installed into the environment archive, the bootstrap venv and the EKS image.
``dist/accel_scoring.zip``
    the import packages (engines, udfs, jobs, emr) for ``--py-files``: the code of a run.
``dist/accel-scoring-env.tar.gz``
    a venv with the wheel and its dependencies (not pyspark: the cluster has it), packed by
    venv-pack, for ``spark.archives=...#environment`` and ``PYSPARK_PYTHON=./environment/bin/python``.
``dist/accel-scoring-env.json``
    what that archive holds (Python, packages, its sha256: emr/envinfo.py), so ``add-step`` and
    ``preflight`` can refuse a backend whose libraries it lacks without unpacking it.
``dist/accel-scoring-constraints.txt``
    the release line's pip constraints (emr/releases.py: what that line's PySpark needs of
    pandas, pyarrow and numpy), under which the archive is built, here or in the container.
``dist/gpu-requirements.txt``
    the GPU stack's pins (emr/stacks.py ``GPU``: the CUDA torch and TensorRT), which
    `make package-gpu` and the bootstrap environment install before the wheel.
``dist/gpu-torch-requirements.txt``
    that stack's CUDA torch alone (``GPU_TORCH``), the same way for `make package-gpu-torch`
    and a bootstrap with a ``torch-cuda`` extra: the environment of ``--backend torch-cuda``
    (emr/gpu_envs.py).

The release line is chosen by ``--release-label`` (default EMR 7's). pyspark itself never goes
into the archive: the cluster's Spark brings its own, on the executors' PYTHONPATH.

A venv-pack archive reuses the base interpreter of the machine it was built on (bin/python is a
link to it) and its compiled wheels must suit the nodes' C library: for EMR 7 build it on
Amazon Linux 2023 with Python 3.11 (``make package-al2023`` does that in a container), where
the interpreter is ``/usr/bin/python3.11`` as on the EMR nodes. ``make package-gpu`` builds the
GPU profiles' archive there too, with the CUDA torch and TensorRT of ``dist/gpu-requirements.txt``,
and ``make package-gpu-torch`` with the CUDA torch alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Callable

from emr import envinfo, gpu_envs
from emr import layout as L
from emr.errors import EmrError
from emr.gpu_envs import GpuEnv
from emr.releases import DEFAULT, ReleaseLine

PACKAGES = ("engines", "udfs", "jobs", "emr")
ENV_DIRNAME = "accel-scoring-env"
# What the executors' environment holds by default: S3 access, and the single-text tokenizer route
# (its marker installs it on x86-64 Linux only; udfs/flash_route.py). GPU environments add their
# extra, `gpu` or `torch-cuda` (emr/gpu_envs.py).
EXECUTOR_EXTRAS = "aws,fast"
CONSTRAINTS = "accel-scoring-constraints.txt"  # read by emr/docker/Dockerfile.al2023-env too
_ZIP_DATE = (2020, 1, 1, 0, 0, 0)  # fixed timestamps: the same sources give the same zip


def build_pyfiles_zip(repo: Path, out: Path) -> Path:
    """Zip the import packages' .py files (deterministic order and timestamps)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for package in PACKAGES:
            root = repo / package
            if not (root / "__init__.py").is_file():
                raise EmrError(f"{root} is not a package (no __init__.py)", exit_code=2)
            for path in sorted(root.rglob("*.py")):
                if "__pycache__" in path.parts:
                    continue
                info = zipfile.ZipInfo(path.relative_to(repo).as_posix(), _ZIP_DATE)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                zf.writestr(info, path.read_bytes())
    os.replace(tmp, out)
    return out


def _run(cmd: list[str], echo: Callable[[str], None]) -> None:
    echo("$ " + " ".join(cmd))
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        raise EmrError(f"command failed ({done.returncode}): {' '.join(cmd)}\n{done.stdout[-4000:]}")


def _has_setuptools() -> bool:
    try:
        import setuptools
    except ImportError:
        return False
    return int(setuptools.__version__.split(".")[0]) >= 68


def build_wheel(repo: Path, dist: Path, echo: Callable[[str], None] = print) -> Path:
    """``pip wheel`` the project (no dependencies) into ``dist``; return the wheel."""
    dist.mkdir(parents=True, exist_ok=True)
    for old in dist.glob("accel_scoring-*.whl"):
        old.unlink()
    # Build in this interpreter when it has setuptools (no download); else pip isolates.
    isolation = ["--no-build-isolation"] if _has_setuptools() else []
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation,
          "--quiet", "-w", str(dist), str(repo)], echo)
    wheels = sorted(dist.glob("accel_scoring-*.whl"))
    if not wheels:
        raise EmrError(f"pip wheel left no accel_scoring-*.whl in {dist}")
    return wheels[-1]


def write_constraints(dist: Path, line: ReleaseLine) -> Path:
    """The release line's pip constraints, with a header naming the line."""
    dist.mkdir(parents=True, exist_ok=True)
    out = dist / CONSTRAINTS
    out.write_text(f"# {line.name} (Spark {line.spark}): what its PySpark needs in the executors' Python "
                   f"(emr/releases.py)\n{line.constraints()}")
    return out


def write_gpu_requirements(dist: Path, env: GpuEnv = gpu_envs.FULL) -> Path:
    """A GPU environment's pins as a pip requirements file, with a header naming its stack and indexes."""
    dist.mkdir(parents=True, exist_ok=True)
    stack = env.stack
    out = dist / env.requirements
    indexes = " and ".join(f"{index} ({index.option})" for index in stack.indexes())
    out.write_text(f"# {stack.describe()} (emr/stacks.py); from {indexes} besides the public index\n"
                   f"{stack.requirements()}")
    return out


def build_env_archive(
    wheel: Path, dist: Path, *, extras: str = EXECUTOR_EXTRAS, line: ReleaseLine = DEFAULT,
    python: str = sys.executable, echo: Callable[[str], None] = print,
) -> Path:
    """Create a venv with ``wheel[extras]`` under ``line``'s constraints and pack it with venv-pack."""
    try:
        import venv_pack
    except ImportError as exc:
        raise EmrError("building the environment archive needs venv-pack (pip install venv-pack)") from exc
    env = dist / ENV_DIRNAME
    if env.exists():
        shutil.rmtree(env)
    _run([python, "-m", "venv", str(env)], echo)
    pip = [str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    spec = f"{wheel}[{extras}]" if extras else str(wheel)
    _run(pip + ["-c", str(write_constraints(dist, line)), spec], echo)
    out = dist / L.ENV_ARCHIVE
    echo(f"venv-pack {env} -> {out}")
    venv_pack.pack(prefix=str(env), output=str(out), force=True, verbose=False)
    out.chmod(0o644)
    envinfo.write_manifest(out)
    return out


def planned(dist: Path, *, with_env: bool = True, extras: str = EXECUTOR_EXTRAS, line: ReleaseLine = DEFAULT) -> list[str]:
    """What ``build_all`` would write, for ``package --dry-run``."""
    pins = ", ".join(name + spec for name, spec in line.executor_libraries.items())
    items = [f"{dist}/accel_scoring-<version>-py3-none-any.whl (pip wheel, no dependencies)",
             f"{dist / L.PYFILES_ZIP} (the --py-files zip of {', '.join(PACKAGES)})",
             f"{dist / CONSTRAINTS} ({line.name}, Spark {line.spark}: {pins})",
             *(f"{dist / env.requirements} (the {env.name} stack for make {env.make_target} and the bootstrap "
               f"with a {env.extra} extra: {env.stack.describe()})" for env in gpu_envs.ENVS)]
    if with_env:
        items.append(f"{dist / L.ENV_ARCHIVE} (a venv with the wheel[{extras}] under those constraints, "
                     "packed by venv-pack)")
        items.append(f"{dist / L.ENV_MANIFEST} (what the archive holds: Python, packages, sha256)")
    return items


def build_all(
    repo: Path, dist: Path, *, with_env: bool = True, extras: str = EXECUTOR_EXTRAS, line: ReleaseLine = DEFAULT,
    echo: Callable[[str], None] = print,
) -> list[Path]:
    """The wheel, the zip, the constraints and each GPU environment's pins; with ``with_env`` the
    archive built under the constraints."""
    built = [build_wheel(repo, dist, echo), build_pyfiles_zip(repo, dist / L.PYFILES_ZIP),
             write_constraints(dist, line), *(write_gpu_requirements(dist, env) for env in gpu_envs.ENVS)]
    if with_env:
        built.append(build_env_archive(built[0], dist, extras=extras, line=line, echo=echo))
    return built
