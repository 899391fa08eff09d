"""The bootstrap-installed Python environment (``create-cluster --python-env bootstrap``).

emr/scripts/install-python-env.sh builds it on every node at cluster start. With a ``gpu``
extra it first installs emr/docker/gpu-requirements.txt, the CUDA 12 torch and TensorRT that
`make package-gpu` puts in the archive, from the two package indexes they come from (given on
the command line, never written into the repository), then the wheel. One class says what the
script gets (``script_args``) and what the result holds (``info``), so create-cluster,
add-step (which reads the arguments back from the cluster) and preflight agree without an
archive to look into.

The venv stays on the root volume: every GPU profile sets ``EbsRootVolumeSize`` to
``GpuProfile.root_volume_gib`` (100 GiB, emr/profiles.py), room for the several-GB stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from emr import layout as L
from emr.envinfo import BACKEND_MODULES, EnvInfo, normalize
from emr.errors import EmrError
from emr.packaging import EXECUTOR_EXTRAS

VENV = "/opt/accel-scoring/venv"
ACTION_NAME = "install-python-env"
# The script's interpreter: python3.11 from the nodes' dnf, as EMR 7 ships it.
PYTHON = "3.11"
INTERPRETER = f"/usr/bin/python{PYTHON}"


@dataclass(frozen=True)
class BootstrapEnv:
    extras: str = "aws,gpu"
    torch_index_url: str | None = None
    nvidia_index_url: str | None = None

    @property
    def gpu(self) -> bool:
        return "gpu" in (e.strip() for e in self.extras.split(","))

    def check(self) -> None:
        """Refuse a GPU environment without its indexes (or indexes without one), before sending."""
        urls = (self.torch_index_url, self.nvidia_index_url)
        if self.gpu and not all(urls):
            raise EmrError(f"--pip-extras {self.extras} needs --torch-index-url and --nvidia-index-url: the "
                           f"CUDA torch and TensorRT of emr/docker/{L.GPU_REQUIREMENTS} come from those "
                           "package indexes (emr/README.md, step 1)", exit_code=2)
        if any(urls) and not self.gpu:
            raise EmrError(f"--torch-index-url and --nvidia-index-url install the GPU stack; add gpu to "
                           f"--pip-extras {self.extras}", exit_code=2)

    def script_args(self, layout: L.Layout) -> list[str]:
        """install-python-env.sh's arguments (its header says what each is)."""
        args = [str(layout.prefix.join("package").as_prefix()), self.extras, VENV]
        if self.gpu:
            args += [str(layout.script(L.GPU_REQUIREMENTS)), str(self.torch_index_url),
                     str(self.nvidia_index_url)]
        return args

    @classmethod
    def from_script_args(cls, args: Sequence[str]) -> "BootstrapEnv":
        """The environment a cluster's install-python-env action was given (``script_args`` read back)."""
        urls = tuple(args[4:6]) if len(args) >= 6 else (None, None)
        return cls(args[1] if len(args) > 1 else EXECUTOR_EXTRAS, *urls)

    def info(self, requirements: Path) -> EnvInfo:
        """What the environment will hold: the project, and with ``gpu`` the pins of ``requirements``."""
        dists = {"accel-scoring": "staged wheel"}
        modules: tuple[str, ...] = ()
        if self.gpu:
            pins = (line.split("#")[0].strip() for line in requirements.read_text().splitlines())
            dists.update((normalize(n), v) for n, _, v in (p.partition("==") for p in pins if p))
            modules = BACKEND_MODULES["tensorrt"]  # that file is what gives the tensorrt backend
        return EnvInfo(python=PYTHON, interpreter=INTERPRETER, modules=modules, distributions=dists,
                       spark_requirements=(), archive_sha256="", archive_size=0)
