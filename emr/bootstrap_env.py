"""The bootstrap-installed Python environment (``create-cluster --python-env bootstrap``).

emr/scripts/install-python-env.sh builds it on every node at cluster start. With a GPU
environment's extra (emr/gpu_envs.py) it first installs that environment's staged requirements
file, the pins `make package-gpu` (extra ``gpu``: torch and TensorRT) or `make package-gpu-torch`
(extra ``torch-cuda``: torch alone) put in the archive, from the package indexes they come from
(given on the command line, never written into the repository), then the wheel. One class says
what the script gets (``script_args``) and what the result holds (``info``), so create-cluster,
add-step (which reads the arguments back from the cluster) and preflight agree without an
archive to look into.

The venv stays on the root volume: every GPU profile sets ``EbsRootVolumeSize`` to
``GpuProfile.root_volume_gib`` (100 GiB, emr/profiles.py), room for the several-GB stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from emr import gpu_envs
from emr import layout as L
from emr.envinfo import BACKEND_MODULES, EnvInfo, normalize
from emr.errors import EmrError
from emr.gpu_envs import GpuEnv
from emr.packaging import EXECUTOR_EXTRAS
from emr.stacks import INDEXES

VENV = "/opt/accel-scoring/venv"
ACTION_NAME = "install-python-env"
# The script's interpreter: python3.11 from the nodes' dnf, as EMR 7 ships it.
PYTHON = "3.11"
INTERPRETER = f"/usr/bin/python{PYTHON}"


def fix_for(env: GpuEnv) -> str:
    """How to create a cluster whose bootstrap environment is ``env``, for error messages."""
    urls = " ".join(f"{index.option} URL" for index in env.stack.indexes())
    return f"create the cluster with --python-env bootstrap --pip-extras {EXECUTOR_EXTRAS},{env.extra} {urls}"


@dataclass(frozen=True)
class BootstrapEnv:
    extras: str = "aws,gpu"
    torch_index_url: str | None = None
    nvidia_index_url: str | None = None

    @property
    def gpu_env(self) -> GpuEnv | None:
        """The GPU environment the extras ask for (emr/gpu_envs.py), if any."""
        return gpu_envs.selected(self.extras)

    def _urls(self) -> dict[str, str | None]:
        """The index URLs given, by INDEXES key."""
        return {"torch-cu126": self.torch_index_url, "nvidia": self.nvidia_index_url}

    def check(self) -> None:
        """Refuse a GPU environment without its indexes, or an index it does not install from, before sending."""
        env, urls = self.gpu_env, self._urls()
        needed = env.stack.indexes() if env else ()
        if any(not urls[index.key] for index in needed):
            raise EmrError(f"--pip-extras {self.extras} needs {' and '.join(i.option for i in needed)}: the "
                           f"{env.name} stack ({env.stack.describe()}) comes from {' and '.join(map(str, needed))} "
                           "(emr/README.md, \"The GPU stack\")", exit_code=2)
        extra = [INDEXES[key].option for key, url in urls.items() if url and INDEXES[key] not in needed]
        if extra and env is None:
            raise EmrError(f"{' and '.join(extra)} install{'s' if len(extra) == 1 else ''} a GPU stack; add "
                           f"{' or '.join(e.extra for e in gpu_envs.ENVS)} to --pip-extras {self.extras}", exit_code=2)
        if extra:
            raise EmrError(f"{' and '.join(extra)} is not used by the {env.name} stack of --pip-extras "
                           f"{self.extras}; add {gpu_envs.FULL.extra} to it for TensorRT, or leave it out",
                           exit_code=2)

    def script_args(self, layout: L.Layout) -> list[str]:
        """install-python-env.sh's arguments (its header says what each is)."""
        args = [str(layout.prefix.join("package").as_prefix()), self.extras, VENV]
        env, urls = self.gpu_env, self._urls()
        if env:
            args += [str(layout.script(env.requirements)), *(str(urls[i.key]) for i in env.stack.indexes())]
        return args

    @classmethod
    def from_script_args(cls, args: Sequence[str]) -> "BootstrapEnv":
        """The environment a cluster's install-python-env action was given (``script_args`` read back)."""
        extras = args[1] if len(args) > 1 else EXECUTOR_EXTRAS
        env = gpu_envs.selected(extras)
        urls = dict(zip((i.key for i in env.stack.indexes()), args[4:])) if env else {}
        return cls(extras, urls.get("torch-cu126"), urls.get("nvidia"))

    def info(self) -> EnvInfo:
        """What the environment will hold: the project, and the pins of the GPU environment its extras ask for."""
        dists = {"accel-scoring": "staged wheel"}
        modules: tuple[str, ...] = ()
        env = self.gpu_env
        if env:
            dists.update((normalize(pin.name), pin.version) for pin in env.stack.pins)
            modules = BACKEND_MODULES[env.backend]  # what that environment is built to run
        return EnvInfo(python=PYTHON, interpreter=INTERPRETER, modules=modules, distributions=dists,
                       spark_requirements=(), archive_sha256="", archive_size=0)
