"""The bootstrap-installed Python environment (``create-cluster --python-env bootstrap``).

emr/scripts/install-python-env.sh builds it on every node at cluster start. With a ``gpu``
extra it first installs the staged gpu-requirements.txt, the GPU stack of emr/stacks.py that
`make package-gpu` puts in the archive, from the two package indexes it comes from (given on
the command line, never written into the repository), then the wheel. One class says what the
script gets (``script_args``) and what the result holds (``info``), so create-cluster,
add-step (which reads the arguments back from the cluster) and preflight agree without an
archive to look into.

The venv stays on the root volume: every GPU profile sets ``EbsRootVolumeSize`` to
``GpuProfile.root_volume_gib`` (100 GiB, emr/profiles.py), room for the several-GB stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from emr import layout as L
from emr.envinfo import BACKEND_MODULES, EnvInfo, normalize
from emr.errors import EmrError
from emr.packaging import EXECUTOR_EXTRAS
from emr.stacks import GPU, GpuStack

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
            torch_index, nvidia_index = GPU.indexes()
            raise EmrError(f"--pip-extras {self.extras} needs --torch-index-url and --nvidia-index-url: the "
                           f"GPU stack ({GPU.describe()}) comes from {torch_index} and {nvidia_index} "
                           "(emr/README.md, \"The GPU stack\")", exit_code=2)
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

    def info(self, stack: GpuStack = GPU) -> EnvInfo:
        """What the environment will hold: the project, and with ``gpu`` the pins of ``stack``."""
        dists = {"accel-scoring": "staged wheel"}
        modules: tuple[str, ...] = ()
        if self.gpu:
            dists.update((normalize(pin.name), pin.version) for pin in stack.pins)
            modules = BACKEND_MODULES["tensorrt"]  # that stack is what gives the tensorrt backend
        return EnvInfo(python=PYTHON, interpreter=INTERPRETER, modules=modules, distributions=dists,
                       spark_requirements=(), archive_sha256="", archive_size=0)
