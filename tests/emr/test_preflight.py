"""`python -m emr preflight` and the environment checks of `add-step`, on small archives built here.

An archive is a tarball laid out as venv-pack writes one (bin/python links, site-packages with
packages and dist-info folders); only member names and the project's METADATA matter.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from emr import envinfo, gpu_envs, layout, packaging
from emr.cli import main
from emr.cluster import DEFAULT_SERVICE_ROLE
from emr.profiles import DEFAULT_RELEASE_LABEL
from engines import trt_build

PREFIX = "s3://deploy/accel/v1/"
# pyproject's Spark extras as a wheel's METADATA writes them
SPARK_EXTRAS = {"spark": "<3.6,>=3.5", "spark4": "<4.2,>=4.0"}
BASE = {"accel_scoring": "0.1.0", "numpy": "2.2.6", "onnxruntime": "1.23.2", "tokenizers": "0.22.1"}
EMR7_BASE = {**BASE, "numpy": "1.26.4"}  # built under EMR 7's constraints: PySpark 3.5 declares numpy<2
GPU = {**BASE, "torch": "2.13.0+cu126", "tensorrt_cu12": "10.16.1.11", "tensorrt_cu12_bindings": "10.16.1.11",
       "tensorrt_cu12_libs": "10.16.1.11", "nvidia_cuda_runtime_cu12": "12.6.77"}
TORCH_ONLY = {**BASE, "torch": "2.13.0+cu126", "nvidia_cuda_runtime_cu12": "12.6.77"}  # make package-gpu-torch
MODULES = {"torch": "torch", "tensorrt_cu12_bindings": "tensorrt", "tensorrt_cu12_libs": "tensorrt_libs",
           "accel_scoring": "engines", "nvidia_cuda_runtime_cu12": "nvidia"}


def project_metadata(spark_extras: dict[str, str]) -> bytes:
    lines = ["Metadata-Version: 2.1", "Name: accel-scoring", "Version: 0.1.0", "Requires-Dist: numpy>=1.26",
             *(f'Requires-Dist: pyspark{spec}; extra == "{extra}"' for extra, spec in spark_extras.items()),
             f'Requires-Dist: {trt_build.TENSORRT_REQUIREMENT}; extra == "gpu"']
    return ("\n".join(lines) + "\n").encode()


def make_archive(path: Path, dists: dict[str, str], *, python: str = "3.11",
                 interpreter: str | None = None, spark_extras: dict[str, str] = SPARK_EXTRAS) -> Path:
    """A venv-pack-shaped archive with these distributions (name -> version) installed; the
    project's METADATA names these Spark extras."""
    site = f"lib/python{python}/site-packages"
    with tarfile.open(path, "w:gz") as tar:
        def add(name: str, data: bytes = b"") -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

        def link(name: str, target: str) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)

        link("bin/python", f"python{python}")
        link(f"bin/python{python}", interpreter or f"/usr/bin/python{python}")
        add("pyvenv.cfg", f"version = {python}\n".encode())
        for dist, version in dists.items():
            module = MODULES.get(dist, dist)
            add(f"{site}/{module}/__init__.py")
            add(f"{site}/{dist}-{version}.dist-info/METADATA",
                project_metadata(spark_extras) if dist == "accel_scoring" else b"Name: " + dist.encode() + b"\n")
    return path


def write_artifact(folder: Path, backend: str = "tensorrt", **target: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    targets = {
        "tensorrt": {"device": "cuda", "runtime": "tensorrt", "tensorrt_min": trt_build.TENSORRT_MIN,
                     "tensorrt_below": trt_build.TENSORRT_BELOW, "min_compute_capability": [7, 5],
                     "precision": "fp16", "opset": 18},
        "neuronx": {"device": "neuron", "runtime": "torch-neuronx", "version": "2.9.0", "instance": "inf2"},
        "onnx": {"device": "cpu", "runtime": "onnxruntime", "opset": 18},
        "torch-cuda": {"device": "cuda", "runtime": "torch", "torch_min": "2.1", "precision": "fp16",
                       "min_compute_capability": [7, 5]},
    }
    files = {"neuronx": {"neuronx/b8_s128.pt": "0" * 64},
             "torch-cuda": {"torch/model.json": "0" * 64, "torch/weights.pt": "1" * 64}}.get(backend,
                                                                                         {"model.onnx": "0" * 64})
    manifest = {"format_version": 1, "name": f"pairs-{backend}", "version": "1", "task": "pair-classification",
                "backend": backend, "max_seq_len": 128, "buckets": [[8, 128]], "files": files,
                "labels": ["different", "duplicate"], "precision": target.pop("precision", "fp16"),
                "target": {**targets[backend], **target}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def preflight(capsys, *args: str) -> tuple[int, list[str]]:
    code = main(["preflight", *args])
    return code, capsys.readouterr().out.strip().splitlines()


def problems(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("problem: ")]


# --- preflight -----------------------------------------------------------------------------------

STACK_LINE = ("stack: CUDA 12: torch 2.13.0+cu126, tensorrt-cu12 10.16.1.11, on an NVIDIA driver R525 or newer "
              "(emr/stacks.py; `make package-gpu` and the bootstrap install it)")


def test_gpu_environment_and_tensorrt_artifact_pass(tmp_path, capsys) -> None:
    archive = make_archive(tmp_path / "env.tar.gz", GPU)
    model = write_artifact(tmp_path / "pairs-trt")
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(archive), "--model", str(model))
    assert code == 0, lines
    assert lines == [
        STACK_LINE,
        "driver: not known here (pass --driver-version); the environment's CUDA 12 stack needs R525 or newer, and "
        "the gpu-driver-check bootstrap action checks it on every node",
        f"checked: release {DEFAULT_RELEASE_LABEL} (EMR 8.1: Spark 4.1), environment Python 3.11 with torch "
        "2.13.0+cu126, tensorrt-cu12 10.16.1.11, backend auto, profile g5 (A10G (sm86)), artifact pairs-tensorrt@1",
        f"preflight OK: profile g5 (A10G (sm86)), {DEFAULT_RELEASE_LABEL}, Python 3.11 environment with torch "
        "2.13.0+cu126, tensorrt-cu12 10.16.1.11, artifact pairs-tensorrt@1 (tensorrt)"]


def test_the_driver_must_run_the_environments_cuda_stack(tmp_path, capsys) -> None:
    """--driver-version: printed, and refused with the fix in the line when the stack needs a newer one."""
    archive = str(make_archive(tmp_path / "env.tar.gz", GPU))
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", archive, "--driver-version", "550.163.01")
    assert code == 0, lines
    assert "driver: 550.163.01 (--driver-version); the environment's CUDA 12 stack needs R525 or newer" in lines
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", archive, "--driver-version", "470.256.02")
    assert code == 1
    assert problems(lines) == [
        "problem: NVIDIA driver 470.256.02 (--driver-version) cannot run the environment's CUDA 12: torch "
        "2.13.0+cu126, tensorrt-cu12 10.16.1.11, on an NVIDIA driver R525 or newer: run on nodes with driver R525 "
        "or newer (another EMR release or a custom AMI)"]
    cu13 = {**BASE, "torch": "2.13.0", "tensorrt_cu13": "10.16.1.11", "nvidia_cudnn_cu13": "9.20.0.48"}
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(make_archive(tmp_path / "13.tar.gz", cu13)),
                            "--driver-version", "550.163.01")
    assert code == 1 and problems(lines)[0].endswith(
        "cannot run the environment's CUDA 13: torch 2.13.0, tensorrt-cu13 10.16.1.11, on an NVIDIA driver R580 or "
        "newer: build the environment with the CUDA 12 stack instead (emr/stacks.py)")
    cpu = str(make_archive(tmp_path / "cpu.tar.gz", BASE))
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", cpu, "--driver-version", "470.256.02")
    assert code == 0 and "driver: not checked (the environment holds no CUDA stack)" in lines
    assert main(["preflight", "--profile", "g5", "--env-archive", archive, "--driver-version", "R525"]) == 2
    assert "--driver-version 'R525' is not an NVIDIA driver version" in capsys.readouterr().err


def test_default_environment_cannot_run_tensorrt(tmp_path, capsys) -> None:
    archive = make_archive(tmp_path / "env.tar.gz", BASE)
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(archive), "--backend", "tensorrt")
    assert code == 1
    assert problems(lines) == ["problem: backend tensorrt needs torch and tensorrt, which the environment lacks: "
                               "build it with `make package-gpu`"]


def test_auto_backend_takes_the_artifacts(tmp_path, capsys) -> None:
    archive = make_archive(tmp_path / "env.tar.gz", BASE)
    model = write_artifact(tmp_path / "pairs-trt")
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(archive), "--model", str(model))
    assert code == 1 and len(problems(lines)) == 1
    assert "backend tensorrt needs torch and tensorrt" in problems(lines)[0]


def test_an_archive_built_elsewhere_names_its_python(tmp_path, capsys) -> None:
    dev = make_archive(tmp_path / "dev.tar.gz", BASE, interpreter="/home/me/.pyenv/versions/3.11.7/bin/python3.11")
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(dev))
    assert code == 1
    assert problems(lines) == ["problem: the environment's bin/python links to /home/me/.pyenv/versions/3.11.7/bin/"
                               "python3.11, not /usr/bin/python3.11 as on the nodes: build it on Amazon Linux 2023 "
                               "with `make package-al2023` or `make package-gpu`"]
    old = make_archive(tmp_path / "py310.tar.gz", BASE, python="3.10")
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(old))
    assert code == 1
    assert f"the environment is Python 3.10; {DEFAULT_RELEASE_LABEL} nodes have Python 3.11" in problems(lines)[0]


def test_release_labels_against_the_wheels_spark_extras(tmp_path, capsys) -> None:
    both = make_archive(tmp_path / "env.tar.gz", EMR7_BASE)  # the spark and spark4 extras: EMR 7 and EMR 8
    for label in ("emr-7.14.0", "emr-spark-8.0.0", "emr-spark-8.1.0"):
        code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(both), "--release-label", label)
        assert code == 0 and not problems(lines), (label, lines)
    only_35 = make_archive(tmp_path / "env35.tar.gz", BASE, spark_extras={"spark": SPARK_EXTRAS["spark"]})
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(only_35),
                            "--release-label", "emr-spark-8.0.0")
    assert code == 1
    assert problems(lines) == ["problem: emr-spark-8.0.0 runs Spark 4.0; the environment's accel-scoring wants "
                               "pyspark <3.6,>=3.5"]
    only_40 = make_archive(tmp_path / "env40.tar.gz", EMR7_BASE, spark_extras={"spark4": "<4.1,>=4.0"})
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(only_40), "--release-label", "emr-7.14.0")
    assert problems(lines) == ["problem: emr-7.14.0 runs Spark 3.5; the environment's accel-scoring wants "
                               "pyspark <4.1,>=4.0"]
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(only_40))  # a wheel from before 4.1
    assert problems(lines) == ["problem: emr-spark-8.1.0 runs Spark 4.1; the environment's accel-scoring wants "
                               "pyspark <4.1,>=4.0"]
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(both), "--release-label", "emr-6.15.0")
    assert code == 1 and "EMR 6.x ships Spark 3.0-3.4" in problems(lines)[0]


def test_emr_8_refuses_libraries_older_than_pyspark_4_needs(tmp_path, capsys) -> None:
    old = make_archive(tmp_path / "env.tar.gz", {**EMR7_BASE, "pandas": "1.5.3", "pyarrow": "20.0.0"})
    code, _ = preflight(capsys, "--profile", "g5", "--env-archive", str(old), "--release-label", "emr-7.14.0")
    assert code == 0  # PySpark 3.5 takes pandas >= 1.0.5 (emr/releases.py)
    pandas21 = make_archive(tmp_path / "p21.tar.gz", {**BASE, "pandas": "2.1.4", "pyarrow": "20.0.0"})
    assert preflight(capsys, "--profile", "g5", "--env-archive", str(pandas21),
                     "--release-label", "emr-spark-8.0.0")[0] == 0
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(pandas21))
    assert code == 1 and problems(lines) == [
        "problem: emr-spark-8.1.0's PySpark 4.1 needs pandas>=2.2.0; the environment has pandas 2.1.4: build it "
        "with `python -m emr package --release-label emr-spark-8.1.0` (or RELEASE_LABEL=emr-spark-8.1.0 for "
        "`make package-al2023`)"]
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(old), "--release-label", "emr-spark-8.0.0")
    assert code == 1
    assert problems(lines) == ["problem: emr-spark-8.0.0's PySpark 4.0 needs pandas>=2.0.0; the environment has "
                               "pandas 1.5.3: build it with `python -m emr package --release-label emr-spark-8.0.0` "
                               "(or RELEASE_LABEL=emr-spark-8.0.0 for `make package-al2023`)"]


def test_emr_7_refuses_numpy_2_as_pyspark_3_5_declares(tmp_path, capsys) -> None:
    numpy2 = make_archive(tmp_path / "env.tar.gz", BASE)
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(numpy2), "--release-label", "emr-7.14.0")
    assert code == 1 and problems(lines) == [
        "problem: emr-7.14.0's PySpark 3.5 needs numpy>=1.15,<2; the environment has numpy 2.2.6: build it with "
        "`python -m emr package --release-label emr-7.14.0` (or RELEASE_LABEL=emr-7.14.0 for `make package-al2023`)"]


def test_artifact_targets_against_the_profiles_gpu(tmp_path, capsys) -> None:
    archive = make_archive(tmp_path / "env.tar.gz", GPU)
    bf16 = write_artifact(tmp_path / "bf16", precision="bf16", min_compute_capability=[8, 0])
    code, lines = preflight(capsys, "--profile", "g4dn", "--env-archive", str(archive), "--model", str(bf16))
    assert code == 1
    assert problems(lines) == ["problem: artifact pairs-tensorrt@1 on profile g4dn (T4 (sm75)): this GPU has "
                               "compute capability 7.5; the artifact's bf16 build needs >= 8.0 (bf16 needs Ampere "
                               "or newer; T4 is 7.5)"]
    assert preflight(capsys, "--profile", "g5", "--env-archive", str(archive), "--model", str(bf16))[0] == 0
    trt11 = write_artifact(tmp_path / "trt11", tensorrt_min="11.0")
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(archive), "--model", str(trt11))
    assert code == 1 and "TensorRT 10.16.1.11 is installed; the artifact was compiled for >= 11.0" in problems(lines)[0]


def test_a_neuron_artifact_belongs_on_emr_on_eks(tmp_path, capsys) -> None:
    archive = make_archive(tmp_path / "env.tar.gz", GPU)
    model = write_artifact(tmp_path / "pairs-inf2", backend="neuronx")
    code, lines = preflight(capsys, "--profile", "p4d", "--env-archive", str(archive), "--model", str(model))
    assert code == 1
    assert problems(lines) == ["problem: artifact pairs-neuronx@1 is a neuronx build for inf2; profile p4d has "
                               "NVIDIA GPUs and EMR on EC2 has no NeuronCores: run it on EMR on EKS "
                               "(`python -m emr eks-submit`)"]


def test_a_requested_backend_the_artifact_cannot_run(tmp_path, capsys) -> None:
    archive = make_archive(tmp_path / "env.tar.gz", GPU)
    model = write_artifact(tmp_path / "pairs-onnx", backend="onnx")
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(archive), "--model", str(model),
                            "--backend", "tensorrt")
    assert code == 1 and "--backend tensorrt cannot run it" in problems(lines)[0]


def test_cpu_torch_and_mixed_cuda_majors(tmp_path, capsys) -> None:
    cpu = make_archive(tmp_path / "cpu.tar.gz", {**GPU, "torch": "2.13.0+cpu"})
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(cpu), "--backend", "tensorrt")
    assert code == 1 and problems(lines) == [
        "problem: the environment's torch 2.13.0+cpu is a CPU-only build; backend tensorrt needs a CUDA build "
        "(`make package-gpu`)"]
    cu13 = {**GPU, "torch": "2.13.0", "nvidia_cudnn_cu13": "9.20.0.48"}  # torch's default wheel: CUDA 13
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive",
                            str(make_archive(tmp_path / "cu13.tar.gz", cu13)), "--backend", "tensorrt")
    assert code == 1 and "mixes CUDA 12 and 13 wheels" in problems(lines)[0]


TORCH_STACK_LINE = ("stack: CUDA 12: torch 2.13.0+cu126, on an NVIDIA driver R525 or newer (emr/stacks.py; "
                    "`make package-gpu-torch` and the bootstrap install it)")


def test_the_torch_only_environment_runs_torch_cuda_not_tensorrt(tmp_path, capsys) -> None:
    archive = str(make_archive(tmp_path / "env.tar.gz", TORCH_ONLY))
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", archive, "--backend", "torch-cuda")
    assert code == 0, lines
    assert lines[0] == TORCH_STACK_LINE
    assert lines[-1] == (f"preflight OK: profile g5 (A10G (sm86)), {DEFAULT_RELEASE_LABEL}, Python 3.11 environment "
                         "with torch 2.13.0+cu126")
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", archive, "--backend", "tensorrt")
    assert code == 1 and lines[0] == STACK_LINE
    assert problems(lines) == ["problem: backend tensorrt needs tensorrt, which the environment lacks: build it with "
                               "`make package-gpu`"]
    full = str(make_archive(tmp_path / "full.tar.gz", GPU))  # the full stack holds torch-cuda's torch too
    assert preflight(capsys, "--profile", "g5", "--env-archive", full, "--backend", "torch-cuda")[0] == 0


def test_torch_cuda_needs_torch_and_its_cuda_build(tmp_path, capsys) -> None:
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(make_archive(tmp_path / "cpu.tar.gz", BASE)),
                            "--backend", "torch-cuda")
    assert code == 1 and problems(lines) == [
        "problem: backend torch-cuda needs torch, which the environment lacks: build it with `make package-gpu-torch`"]
    cpu_torch = make_archive(tmp_path / "cpu-torch.tar.gz", {**BASE, "torch": "2.13.0+cpu"})
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(cpu_torch), "--backend", "torch-cuda")
    assert code == 1 and problems(lines) == [
        "problem: the environment's torch 2.13.0+cpu is a CPU-only build; backend torch-cuda needs a CUDA build "
        "(`make package-gpu-torch`)"]


def test_the_driver_check_holds_for_the_torch_only_environment(tmp_path, capsys) -> None:
    archive = str(make_archive(tmp_path / "env.tar.gz", TORCH_ONLY))
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", archive, "--backend", "torch-cuda",
                            "--driver-version", "470.256.02")
    assert code == 1 and problems(lines) == [
        "problem: NVIDIA driver 470.256.02 (--driver-version) cannot run the environment's CUDA 12: torch "
        "2.13.0+cu126, on an NVIDIA driver R525 or newer: run on nodes with driver R525 or newer (another EMR "
        "release or a custom AMI)"]
    assert preflight(capsys, "--profile", "g5", "--env-archive", archive, "--backend", "torch-cuda",
                     "--driver-version", "525.147.05")[0] == 0


@pytest.mark.parametrize("backend", ["auto", "torch-cuda"])
def test_a_bf16_torch_cuda_artifact_is_refused_on_a_t4(tmp_path, capsys, backend) -> None:
    """engines/torch_cuda.py MIN_COMPUTE_CAPABILITY: bf16 needs 8.0; the worker would refuse it at load."""
    archive = str(make_archive(tmp_path / "env.tar.gz", TORCH_ONLY))
    bf16 = str(write_artifact(tmp_path / "bf16", "torch-cuda", precision="bf16", min_compute_capability=[8, 0]))
    code, lines = preflight(capsys, "--profile", "g4dn", "--env-archive", archive, "--model", bf16, "--backend", backend)
    assert code == 1
    assert problems(lines) == [
        "problem: artifact pairs-torch-cuda@1 on profile g4dn (T4 (sm75)): this GPU has compute capability 7.5; a "
        "bf16 torch-cuda artifact needs >= 8.0 (compile it with --precision fp16 for this GPU, or pick a profile "
        "with a newer GPU)"]
    assert lines[0] == TORCH_STACK_LINE
    for profile in ("g5", "p4d"):
        assert preflight(capsys, "--profile", profile, "--env-archive", archive, "--model", bf16,
                         "--backend", backend)[0] == 0
    fp16 = str(write_artifact(tmp_path / "fp16", "torch-cuda"))
    code, lines = preflight(capsys, "--profile", "g4dn", "--env-archive", archive, "--model", fp16, "--backend", backend)
    assert code == 0, lines
    assert lines[-1].endswith("artifact pairs-torch-cuda@1 (torch-cuda)")


def test_auto_takes_a_torch_cuda_artifacts_environment_needs(tmp_path, capsys) -> None:
    model = str(write_artifact(tmp_path / "pairs-torch-cuda", "torch-cuda"))
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", str(make_archive(tmp_path / "e.tar.gz", BASE)),
                            "--model", model)
    assert code == 1 and problems(lines) == [
        "problem: backend torch-cuda needs torch, which the environment lacks: build it with `make package-gpu-torch`"]


def test_missing_inputs_are_usage_errors(tmp_path, capsys) -> None:
    assert main(["preflight", "--profile", "g5", "--env-archive", str(tmp_path / "none.tar.gz")]) == 2
    assert "no environment archive at" in capsys.readouterr().err
    archive = make_archive(tmp_path / "env.tar.gz", BASE)
    assert main(["preflight", "--profile", "g5", "--env-archive", str(archive), "--model", str(tmp_path)]) == 2
    assert "manifest.json not found" in capsys.readouterr().err
    assert main(["preflight", "--profile", "inf2", "--env-archive", str(archive)]) == 2


def test_dry_run_reads_nothing(tmp_path, capsys) -> None:
    code = main(["preflight", "--profile", "g5", "--env-archive", str(tmp_path / "none.tar.gz"), "--dry-run"])
    captured = capsys.readouterr()
    assert code == 0 and captured.out == "" and captured.err.startswith("would check ")  # prose: stderr
    assert "dry run: nothing was read" in captured.err


@pytest.mark.parametrize("spec, version, expected", [
    (">=3.5,<3.6", "3.5.0", True), (">=3.5,<3.6", "4.0.0", False), ("<3.6,>=3.5", "3.4.0", False),
    ("~=3.5", "3.9.0", True), ("~=3.5.0", "3.6.0", False), ("==3.5.*", "3.5.0", True), ("!=3.5.1", "3.5.0", True),
])
def test_admits_reads_pyspark_requirements(spec, version, expected) -> None:
    from emr.preflight import admits

    assert admits(spec, version) is expected


# --- the manifest beside the archive -------------------------------------------------------------

def test_manifest_is_used_only_for_the_archive_it_describes(tmp_path) -> None:
    archive = make_archive(tmp_path / "accel-scoring-env.tar.gz", GPU)
    info = envinfo.write_manifest(archive)
    assert envinfo.manifest_path(archive) == tmp_path / "accel-scoring-env.json"
    assert info.python == "3.11" and info.interpreter == "/usr/bin/python3.11"
    assert {"torch", "tensorrt"} <= set(info.modules) and info.spark_requirements == ("<3.6,>=3.5", "<4.2,>=4.0")
    assert info.tensorrt_version == "10.16.1.11" and info.cuda_majors == {12}
    edited = {**info.to_dict(), "python": "3.99"}
    envinfo.manifest_path(archive).write_text(json.dumps(edited))
    assert envinfo.load(archive).python == "3.99"  # same sha256: the manifest is trusted
    make_archive(archive, BASE)  # rebuilt by other means; the manifest is stale
    assert envinfo.load(archive).python == "3.11" and "torch" not in envinfo.load(archive).modules


# --- add-step refuses what the staged environment cannot run -------------------------------------

def _stage(s3, dist: Path, archive_dists: dict[str, str], *, manifest: bool = True) -> None:
    """Build an archive (and its manifest, or none) into ``dist`` and stage it."""
    for name in ("accel_scoring.zip", "accel_scoring-0.1.0-py3-none-any.whl"):
        (dist / name).write_bytes(b"PK")
    for env in gpu_envs.ENVS:
        packaging.write_gpu_requirements(dist, env)
    archive = make_archive(dist / "accel-scoring-env.tar.gz", archive_dists)
    envinfo.manifest_path(archive).unlink(missing_ok=True)
    if manifest:
        envinfo.write_manifest(archive)
    jobs = dist.parent / "jobs"
    jobs.mkdir(exist_ok=True)
    for job in layout.JOBS:
        (jobs / f"{job}.py").write_text("# entry point\n")
    assert main(["stage", "--prefix", PREFIX, "--dist", str(dist), "--jobs-dir", str(jobs)]) == 0


@pytest.fixture
def cluster(aws, s3, tmp_path, capsys) -> str:
    import boto3

    s3.create_bucket(Bucket="deploy")
    (tmp_path / "dist").mkdir()
    iam = boto3.client("iam")
    iam.create_role(RoleName=DEFAULT_SERVICE_ROLE, AssumeRolePolicyDocument="{}")
    iam.create_role(RoleName="EMR_EC2_DefaultRole", AssumeRolePolicyDocument="{}")
    iam.create_instance_profile(InstanceProfileName="EMR_EC2_DefaultRole")
    assert main(["create-cluster", "--profile", "g5", "--prefix", PREFIX, "--log-uri", "s3://deploy/logs/"]) == 0
    return capsys.readouterr().out.strip().splitlines()[-1]


def _add_step(cluster_id: str, backend: str | None, *extra: str) -> int:
    """add-step with ``-- --backend backend``, or with no job flags (the jobs' auto) for None."""
    return main(["add-step", "--cluster-id", cluster_id, "--prefix", PREFIX, *extra, "--job", "duplicates",
                 "--input", "s3://data/pairs/", "--output", "s3://data/scores/",
                 "--model", PREFIX + "models/pairs-trt/1/", "--run-date", "2026-11-01",
                 *(["--", "--backend", backend] if backend else [])])


def _steps(cluster_id: str) -> list:
    import boto3

    return boto3.client("emr").list_steps(ClusterId=cluster_id)["Steps"]


def test_add_step_refuses_tensorrt_on_the_default_environment(cluster, s3, tmp_path, capsys) -> None:
    _stage(s3, tmp_path / "dist", BASE)
    assert s3.head_object(Bucket="deploy", Key="accel/v1/env/accel-scoring-env.json")
    capsys.readouterr()
    assert _add_step(cluster, "tensorrt") == 2
    err = capsys.readouterr().err
    assert err == ("error: --backend tensorrt needs torch and tensorrt, which s3://deploy/accel/v1/env/"
                   "accel-scoring-env.tar.gz lacks (it has Python 3.11); build the GPU environment with "
                   "`make package-gpu` and stage it\n")
    assert _steps(cluster) == []  # nothing was added
    assert _add_step(cluster, "onnx") == 0  # the CPU default needs nothing more


def test_add_step_runs_tensorrt_on_the_gpu_environment(cluster, s3, tmp_path, capsys) -> None:
    _stage(s3, tmp_path / "dist", GPU)
    assert _add_step(cluster, "tensorrt") == 0
    assert len(_steps(cluster)) == 1


def test_add_step_refuses_an_archive_it_cannot_vouch_for(cluster, s3, tmp_path, capsys) -> None:
    dist = tmp_path / "dist"
    _stage(s3, dist, GPU, manifest=False)
    capsys.readouterr()
    assert _add_step(cluster, "tensorrt") == 2
    assert "has no accel-scoring-env.json to show it has them" in capsys.readouterr().err
    _stage(s3, dist, GPU)
    _stage(s3, dist, BASE, manifest=False)  # rebuilt by other means: S3 keeps the GPU build's manifest
    capsys.readouterr()
    assert _add_step(cluster, "tensorrt") == 1
    assert "describes another archive than s3://deploy/accel/v1/env/accel-scoring-env.tar.gz" in capsys.readouterr().err
    assert _steps(cluster) == []


def test_add_step_resolves_auto_from_the_staged_artifact(cluster, s3, tmp_path, capsys) -> None:
    _stage(s3, tmp_path / "dist", BASE)
    assert _add_step(cluster, None) == 0  # no artifact there yet: the job's driver will say so
    manifest = write_artifact(tmp_path / "pairs-trt") / "manifest.json"
    s3.put_object(Bucket="deploy", Key="accel/v1/models/pairs-trt/1/manifest.json", Body=manifest.read_bytes())
    capsys.readouterr()
    assert _add_step(cluster, None) == 2
    assert capsys.readouterr().err.startswith(
        "error: --backend auto (artifact s3://deploy/accel/v1/models/pairs-trt/1/ is a tensorrt build) needs torch "
        "and tensorrt, which s3://deploy/accel/v1/env/accel-scoring-env.tar.gz lacks")
    assert len(_steps(cluster)) == 1  # only the first


def test_create_cluster_warns_when_tensorrt_steps_would_be_refused(cluster, s3, tmp_path, capsys) -> None:
    _stage(s3, tmp_path / "dist", BASE)
    capsys.readouterr()
    assert main(["create-cluster", "--profile", "g5", "--prefix", PREFIX, "--log-uri", "s3://deploy/logs/"]) == 0
    assert "warning: --backend tensorrt needs torch and tensorrt" in capsys.readouterr().err


def test_create_cluster_takes_a_torch_only_archive_without_warning(cluster, s3, tmp_path, capsys) -> None:
    """It runs --backend torch-cuda, so GPU steps can run on the cluster: nothing to warn about."""
    _stage(s3, tmp_path / "dist", TORCH_ONLY)
    capsys.readouterr()
    assert main(["create-cluster", "--profile", "g5", "--prefix", PREFIX, "--log-uri", "s3://deploy/logs/"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_add_step_runs_torch_cuda_on_the_torch_only_environment(cluster, s3, tmp_path, capsys) -> None:
    _stage(s3, tmp_path / "dist", TORCH_ONLY)
    capsys.readouterr()
    assert _add_step(cluster, "torch-cuda") == 0
    assert _add_step(cluster, "tensorrt") == 2
    assert capsys.readouterr().err.endswith(
        "error: --backend tensorrt needs tensorrt, which s3://deploy/accel/v1/env/accel-scoring-env.tar.gz lacks (it "
        "has Python 3.11); build the GPU environment with `make package-gpu` and stage it\n")
    assert len(_steps(cluster)) == 1


@pytest.mark.parametrize("dists, message", [
    (BASE, "error: --backend torch-cuda needs torch, which s3://deploy/accel/v1/env/accel-scoring-env.tar.gz lacks "
           "(it has Python 3.11); build the torch-only GPU environment with `make package-gpu-torch` and stage it\n"),
    ({**BASE, "torch": "2.13.0+cpu"},
     "error: --backend torch-cuda needs a CUDA build of torch, and s3://deploy/accel/v1/env/accel-scoring-env.tar.gz "
     "has torch 2.13.0+cpu, PyTorch's CPU-only build; build the torch-only GPU environment with "
     "`make package-gpu-torch` and stage it\n"),
])
def test_add_step_refuses_torch_cuda_without_a_cuda_torch(cluster, s3, tmp_path, capsys, dists, message) -> None:
    _stage(s3, tmp_path / "dist", dists)
    capsys.readouterr()
    assert _add_step(cluster, "torch-cuda") == 2
    assert capsys.readouterr().err == message
    assert _steps(cluster) == []


def test_add_step_resolves_auto_to_a_torch_cuda_artifacts_needs(cluster, s3, tmp_path, capsys) -> None:
    _stage(s3, tmp_path / "dist", BASE)
    manifest = write_artifact(tmp_path / "pairs-torch-cuda", "torch-cuda") / "manifest.json"
    s3.put_object(Bucket="deploy", Key="accel/v1/models/pairs-trt/1/manifest.json", Body=manifest.read_bytes())
    capsys.readouterr()
    assert _add_step(cluster, None) == 2
    assert capsys.readouterr().err.startswith(
        "error: --backend auto (artifact s3://deploy/accel/v1/models/pairs-trt/1/ is a torch-cuda build) needs torch, "
        "which s3://deploy/accel/v1/env/accel-scoring-env.tar.gz lacks")


def test_add_step_dry_run_says_what_torch_cuda_needs(capsys) -> None:
    assert main(["add-step", "--cluster-id", "j-ANY", "--prefix", PREFIX, "--job", "duplicates", "--input", "s3://d/p/",
                 "--output", "s3://d/o/", "--model", PREFIX + "models/m/1/", "--run-date", "2026-11-01", "--dry-run",
                 "--", "--backend", "torch-cuda"]) == 0
    assert "would check that s3://deploy/accel/v1/env/accel-scoring-env.tar.gz has torch\n" in capsys.readouterr().err


# --- the bootstrap environment: torch and tensorrt from gpu-requirements.txt and two indexes -----

INDEXES = ("--torch-index-url", "https://torch.example.invalid/cu126",
           "--nvidia-index-url", "https://nvidia.example.invalid/simple")


def test_preflight_knows_the_bootstrap_gpu_environment(tmp_path, capsys) -> None:
    model = str(write_artifact(tmp_path / "pairs-trt"))
    code, lines = preflight(capsys, "--profile", "g5", "--python-env", "bootstrap", *INDEXES, "--model", model)
    assert (code, lines[-1]) == (0, "preflight OK: profile g5 (A10G (sm86)), emr-spark-8.1.0, Python 3.11 environment "
                                    "with torch 2.13.0+cu126, tensorrt-cu12 10.16.1.11, artifact pairs-tensorrt@1 "
                                    "(tensorrt)")
    assert lines[0] == STACK_LINE
    code, lines = preflight(capsys, "--profile", "g5", "--python-env", "bootstrap", "--pip-extras", "aws",
                            "--backend", "tensorrt")
    assert code == 1 and "backend tensorrt needs torch and tensorrt" in problems(lines)[0]


def test_preflight_knows_the_bootstrap_torch_only_environment(tmp_path, capsys) -> None:
    model = str(write_artifact(tmp_path / "pairs-torch-cuda", "torch-cuda"))
    torch_only = ("--python-env", "bootstrap", "--pip-extras", "aws,fast,torch-cuda", *INDEXES[:2])
    code, lines = preflight(capsys, "--profile", "g5", *torch_only, "--model", model)
    assert (code, lines[0], lines[-1]) == (0, TORCH_STACK_LINE, (
        "preflight OK: profile g5 (A10G (sm86)), emr-spark-8.1.0, Python 3.11 environment with torch 2.13.0+cu126, "
        "artifact pairs-torch-cuda@1 (torch-cuda)"))
    code, lines = preflight(capsys, "--profile", "g5", *torch_only, "--backend", "tensorrt")
    assert code == 1 and problems(lines) == ["problem: backend tensorrt needs tensorrt, which the environment lacks: "
                                             "build it with `make package-gpu`"]
    code, lines = preflight(capsys, "--profile", "g5", "--python-env", "bootstrap", "--pip-extras", "aws",
                            "--backend", "torch-cuda")
    assert code == 1 and problems(lines)[0].endswith("build it with `make package-gpu-torch`")


def test_preflight_refuses_a_bootstrap_gpu_environment_without_indexes(capsys) -> None:
    assert main(["preflight", "--profile", "g5", "--python-env", "bootstrap", INDEXES[0], INDEXES[1]]) == 2
    assert capsys.readouterr().err == (
        "error: --pip-extras aws,fast,gpu needs --torch-index-url and --nvidia-index-url: the GPU stack (CUDA 12: "
        "torch 2.13.0+cu126, tensorrt-cu12 10.16.1.11, on an NVIDIA driver R525 or newer) comes from PyTorch's CUDA "
        "12.6 wheel index (cu126) and NVIDIA's package index (emr/README.md, \"The GPU stack\")\n")


def _bootstrap_cluster(capsys, *extra: str) -> str:
    assert main(["create-cluster", "--profile", "g5", "--prefix", PREFIX, "--log-uri", "s3://deploy/logs/",
                 "--python-env", "bootstrap", *extra]) == 0
    return capsys.readouterr().out.strip().splitlines()[-1]


def test_add_step_runs_tensorrt_on_a_bootstrap_gpu_cluster(cluster, s3, tmp_path, capsys) -> None:
    _stage(s3, tmp_path / "dist", BASE)
    gpu_cluster = _bootstrap_cluster(capsys, *INDEXES)
    assert _add_step(gpu_cluster, "tensorrt", "--python-env", "bootstrap") == 0
    assert len(_steps(gpu_cluster)) == 1
    cpu_cluster = _bootstrap_cluster(capsys, "--pip-extras", "aws")
    assert _add_step(cpu_cluster, "tensorrt", "--python-env", "bootstrap") == 2
    assert capsys.readouterr().err == (
        f"error: --backend tensorrt needs torch and tensorrt, which cluster {cpu_cluster}'s bootstrap environment "
        "lacks (it has Python 3.11); create the cluster with --python-env bootstrap --pip-extras aws,fast,gpu "
        "--torch-index-url URL --nvidia-index-url URL\n")
    assert _add_step(cluster, "tensorrt", "--python-env", "bootstrap") == 2  # an archive cluster
    assert "has no install-python-env bootstrap action" in capsys.readouterr().err
    assert _steps(cpu_cluster) == [] and _steps(cluster) == []


def test_add_step_runs_torch_cuda_on_a_bootstrap_torch_only_cluster(cluster, s3, tmp_path, capsys) -> None:
    _stage(s3, tmp_path / "dist", BASE)
    torch_cluster = _bootstrap_cluster(capsys, "--pip-extras", "aws,fast,torch-cuda", *INDEXES[:2])
    assert _add_step(torch_cluster, "torch-cuda", "--python-env", "bootstrap") == 0
    assert _add_step(torch_cluster, "tensorrt", "--python-env", "bootstrap") == 2
    assert capsys.readouterr().err == (
        f"error: --backend tensorrt needs tensorrt, which cluster {torch_cluster}'s bootstrap environment lacks (it "
        "has Python 3.11); create the cluster with --python-env bootstrap --pip-extras aws,fast,gpu --torch-index-url "
        "URL --nvidia-index-url URL\n")
    cpu_cluster = _bootstrap_cluster(capsys, "--pip-extras", "aws")
    assert _add_step(cpu_cluster, "torch-cuda", "--python-env", "bootstrap") == 2
    assert capsys.readouterr().err.endswith(
        "create the cluster with --python-env bootstrap --pip-extras aws,fast,torch-cuda --torch-index-url URL\n")
    assert len(_steps(torch_cluster)) == 1 and _steps(cpu_cluster) == []


# --- --online: the indexes CI cannot reach, as local PEP 503 indexes here ------------------------

def _index(root: Path, files: dict[str, list[str]]) -> str:
    """A file:// simple index serving these file names (the files need not exist: pip lists, never opens)."""
    for project, names in files.items():
        page = root / project
        page.mkdir(parents=True)
        links = "".join(f'<a href="{name.replace("+", "%2B")}">{name}</a>\n' for name in names)
        (page / "index.html").write_text(f"<html><body>\n{links}</body></html>\n")
    return root.as_uri()


TORCH_WHEELS = {"torch": ["torch-2.13.0+cu126-cp311-cp311-manylinux_2_28_x86_64.whl",
                          "torch-2.11.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl"]}
NVIDIA_WHEELS = {"tensorrt-cu12-libs": ["tensorrt_cu12_libs-10.16.1.11-py2.py3-none-manylinux_2_28_x86_64.whl"]}
NEURON_WHEELS = {"torch-neuronx": ["torch_neuronx-2.9.0.2.15.32035-py3-none-any.whl"],
                 "neuronx-cc": ["neuronx_cc-2.26.6360.0-cp311-cp311-linux_x86_64.whl"]}


def test_online_finds_every_pin_on_the_indexes_given(tmp_path, capsys) -> None:
    archive = str(make_archive(tmp_path / "env.tar.gz", GPU))
    torch, nvidia, neuron = (_index(tmp_path / name, files) for name, files in
                             (("torch", TORCH_WHEELS), ("nvidia", NVIDIA_WHEELS), ("neuron", NEURON_WHEELS)))
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", archive, "--online", "--torch-index-url", torch,
                            "--nvidia-index-url", nvidia, "--neuron-index-url", neuron)
    assert code == 0, lines
    assert [line for line in lines if line.startswith("online: ")] == [
        f"online: torch==2.13.0+cu126 is on PyTorch's CUDA 12.6 wheel index (cu126) ({torch})",
        f"online: tensorrt-cu12-libs==10.16.1.11 is on NVIDIA's package index ({nvidia})",
        f"online: torch-neuronx==2.9.0.2.15.32035 is on the Neuron pip repository ({neuron})",
        f"online: neuronx-cc==2.26.6360.0 is on the Neuron pip repository ({neuron})"]


def test_online_names_a_missing_pin_and_what_it_did_not_check(tmp_path, capsys) -> None:
    archive = str(make_archive(tmp_path / "env.tar.gz", GPU))
    cu128 = _index(tmp_path / "torch", {"torch": TORCH_WHEELS["torch"][1:]})  # 2.11 was cu128's last release
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", archive, "--online", "--torch-index-url", cu128)
    assert code == 1
    assert problems(lines) == [f"problem: torch==2.13.0+cu126 is not on {cu128} for CPython 3.11 on x86_64 Linux "
                               "(glibc 2.34); versions there: 2.11.0+cu128"]
    assert "online: not checked: the Neuron pip repository (torch-neuronx==2.9.0.2.15.32035, neuronx-cc==2.26.6360.0; "\
           "pass --neuron-index-url URL)" in lines


def test_online_says_when_an_index_cannot_be_reached(tmp_path, capsys) -> None:
    archive = str(make_archive(tmp_path / "env.tar.gz", GPU))
    code, lines = preflight(capsys, "--profile", "g5", "--env-archive", archive, "--online",
                            "--nvidia-index-url", "http://127.0.0.1:9/simple")  # nothing listens on port 9
    assert code == 1
    assert problems(lines)[0].startswith("problem: NVIDIA's package index: cannot reach http://127.0.0.1:9/simple: ")
