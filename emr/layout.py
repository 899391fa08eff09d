"""Where staged files live under an S3 prefix; one convention shared by every command.

::

    <prefix>/jobs/<job>.py                                spark-submit entry points (JOBS)
    <prefix>/package/accel_scoring.zip                    --py-files (engines, udfs, jobs, emr)
    <prefix>/package/<the project wheel>                  for the bootstrap-installed environment
    <prefix>/env/accel-scoring-env.tar.gz                 venv-pack archive (spark.archives)
    <prefix>/env/accel-scoring-env.json                   what that archive holds (emr/envinfo.py)
    <prefix>/scripts/<name>                               bootstrap and discovery scripts (get_gpus.sh)
    <prefix>/scripts/gpu-requirements.txt                 the CUDA torch + TensorRT pins they install
    <prefix>/scripts/gpu-torch-requirements.txt           the CUDA torch alone (--backend torch-cuda)
    <prefix>/eks/<name>                                   pod templates for EMR on EKS
    <prefix>/models/<name>/<version>/                     model artifacts (manifest.json + files)
"""

from __future__ import annotations

from dataclasses import dataclass

from emr.s3 import S3Uri

JOBS = ("duplicates", "query_intent", "embed_texts")
PYFILES_ZIP = "accel_scoring.zip"
ENV_ARCHIVE = "accel-scoring-env.tar.gz"
ENV_MANIFEST = "accel-scoring-env.json"
ENV_ALIAS = "environment"  # spark.archives ...#environment -> ./environment/bin/python
CGROUP_BOOTSTRAP = "gpu-cgroup-bootstrap.sh"
INSTALL_ENV_BOOTSTRAP = "install-python-env.sh"
CACHE_DIR_BOOTSTRAP = "node-cache-dir.sh"
NEURON_DISCOVERY = "get_neuroncores.py"
GPU_DISCOVERY = "get_gpus.sh"  # shipped with every application on the GPU clusters (emr/profiles.py)
GPU_REQUIREMENTS = "gpu-requirements.txt"  # written to dist/ by `python -m emr package` (emr/stacks.py GPU)
GPU_TORCH_REQUIREMENTS = "gpu-torch-requirements.txt"  # the same, for GPU_TORCH (emr/gpu_envs.py)
EXECUTOR_POD_TEMPLATE = "executor-pod-template.yaml"
DRIVER_POD_TEMPLATE = "driver-pod-template.yaml"


@dataclass(frozen=True)
class Layout:
    prefix: S3Uri

    @classmethod
    def at(cls, prefix: str) -> "Layout":
        return cls(S3Uri.parse(prefix).as_prefix())

    def job(self, name: str) -> S3Uri:
        return self.prefix.join("jobs", f"{name}.py")

    @property
    def pyfiles(self) -> S3Uri:
        return self.prefix.join("package", PYFILES_ZIP)

    def wheel(self, filename: str) -> S3Uri:
        return self.prefix.join("package", filename)

    @property
    def env_archive(self) -> S3Uri:
        return self.prefix.join("env", ENV_ARCHIVE)

    @property
    def env_manifest(self) -> S3Uri:
        return self.prefix.join("env", ENV_MANIFEST)

    def script(self, name: str) -> S3Uri:
        return self.prefix.join("scripts", name)

    def eks(self, name: str) -> S3Uri:
        return self.prefix.join("eks", name)

    def model(self, name: str, version: str) -> S3Uri:
        return self.prefix.join("models", name, version).as_prefix()
