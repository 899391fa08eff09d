"""Hardware probes, Spark resource discovery scripts and device binding, with canned tool output.

Contract tests only: nothing here touches a GPU or a NeuronCore.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engines import hardware
from engines.base import Device
from udfs.device import bind_device, parse_device

ROOT = Path(__file__).resolve().parent.parent
CANNED = Path(__file__).resolve().parent / "canned"
SCRIPTS = ROOT / "emr" / "scripts"


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    """fake_tools(nvidia_smi=..., neuron_ls=...): executables on a PATH that holds only them.

    A tool's value is the text it prints whatever its arguments, or a dict from its first
    argument to that text ("*": any other argument); an argument the dict lacks exits 2 with
    a usage error, as a tool refusing a flag it does not know.
    """

    def install(**outputs):
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        for name, answers in outputs.items():
            tool = bin_dir / name.replace("_", "-")
            answers = answers if isinstance(answers, dict) else {"*": answers}
            cases = []
            for i, (arg, text) in enumerate(answers.items()):
                out = tmp_path / f"{tool.name}.{i}.out"
                out.write_text(text)
                cases.append(f"  {arg if arg == '*' else repr(arg)}) cat '{out}' ;;")
            if "*" not in answers:
                cases.append(f"  *) echo \"{tool.name}: unrecognized option '$1'\" >&2; exit 2 ;;")
            tool.write_text("#!/bin/sh\ncase \"$1\" in\n" + "\n".join(cases) + "\nesac\n")
            tool.chmod(0o755)
        # Only these and the shell tools the scripts need are reachable; a real nvidia-smi or
        # neuron-ls on this machine is not.
        for name in ("bash", "sh", "cat"):
            link = bin_dir / name
            if not link.exists():
                link.symlink_to(shutil.which(name))
        monkeypatch.setenv("PATH", str(bin_dir))
        monkeypatch.delenv("NEURON_RT_VISIBLE_CORES", raising=False)
        return bin_dir

    return install


def neuron_ls(canned: str) -> dict:
    """A neuron-ls that knows only the flag of `canned`'s format (tests/canned/README.md)."""
    flag = "--output-format" if canned.startswith("neuron-ls-output-format-json") else "-j"
    return {flag: (CANNED / canned).read_text()}


def _run_script(name: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    script = SCRIPTS / name
    cmd = [sys.executable, str(script)] if name.endswith(".py") else ["bash", str(script)]
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=30)


# ------------------------------------------------------------------ discovery scripts


def test_gpu_discovery_script_prints_resource_information(fake_tools):
    fake_tools(nvidia_smi=(CANNED / "nvidia-smi-4gpu.txt").read_text())
    done = _run_script("get_gpus.sh")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "gpu", "addresses": ["0", "1", "2", "3"]}


def test_gpu_discovery_script_fails_loudly_without_nvidia_smi(fake_tools):
    fake_tools()
    done = _run_script("get_gpus.sh")
    assert done.returncode == 1 and "nvidia-smi not found" in done.stderr and done.stdout == ""


def _nvidia_smi(driver: str) -> dict:
    return {"--query-gpu=index": (CANNED / "nvidia-smi-4gpu.txt").read_text(),
            "--query-gpu=driver_version": f"{driver}\n{driver}\n{driver}\n{driver}\n"}


@pytest.mark.parametrize("driver, ok", [("550.163.01", True), ("525.60.13", True), ("470.256.02", False)])
def test_gpu_discovery_refuses_a_driver_the_executors_stack_cannot_use(fake_tools, driver, ok):
    """ACCEL_SCORING_MIN_DRIVER (the cluster's spark-defaults): an executor on an old driver fails at start, saying so."""
    fake_tools(nvidia_smi=_nvidia_smi(driver))
    done = _run_script("get_gpus.sh", {"ACCEL_SCORING_MIN_DRIVER": "525"})
    assert f"NVIDIA driver {driver}; the CUDA stack of the executors needs R525 or newer" in done.stderr
    if ok:
        assert done.returncode == 0 and json.loads(done.stdout)["addresses"] == ["0", "1", "2", "3"]
    else:
        assert done.returncode == 1 and done.stdout == ""
        assert f"NVIDIA driver {driver} cannot run the CUDA stack of the executors: run on nodes with driver R525" \
               in done.stderr


@pytest.mark.parametrize("tools, code, said", [
    (dict(nvidia_smi=_nvidia_smi("550.163.01")), 0, "NVIDIA driver 550.163.01; CUDA 12 stack needs R525 or newer"),
    (dict(nvidia_smi=_nvidia_smi("470.256.02")), 1, "NVIDIA driver 470.256.02 cannot run CUDA 12 stack"),
    ({}, 0, "no nvidia-smi on this node, so no NVIDIA driver to check here"),  # the primary node
])
def test_the_bootstrap_driver_check_prints_the_driver_and_fails_an_old_one(fake_tools, tools, code, said):
    fake_tools(**tools)
    done = subprocess.run(["bash", str(SCRIPTS / "get_gpus.sh"), "--check-driver", "525", "CUDA 12 stack"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == code and said in done.stderr and done.stdout == ""


@pytest.mark.parametrize("canned, expected", [
    ("neuron-ls-j-inf2-xlarge.json", ["0", "1"]),
    ("neuron-ls-j-inf2-24xlarge.json", [str(i) for i in range(12)]),
    ("neuron-ls-j-per-device-ids.json", [str(i) for i in range(16)]),
    ("neuron-ls-output-format-json-inf2-24xlarge.json", [str(i) for i in range(12)]),
])
def test_neuroncore_discovery_script_reads_both_neuron_ls_formats(fake_tools, canned, expected):
    """Neuron 2.34's neuron-ls has only --output-format json; older ones only -j."""
    fake_tools(neuron_ls=neuron_ls(canned))
    done = _run_script("get_neuroncores.py")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "neuroncore", "addresses": expected}
    assert hardware.parse_neuron_ls((CANNED / canned).read_text()) == expected  # the probe agrees


def test_an_old_neuron_ls_that_ignores_the_new_flag_falls_back_to_j(fake_tools):
    fake_tools(neuron_ls={"-j": (CANNED / "neuron-ls-j-inf2-xlarge.json").read_text(),
                          "*": "instance-type: inf2.xlarge\n+--------+--------+\n"})
    done = _run_script("get_neuroncores.py")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["addresses"] == ["0", "1"]
    assert hardware.local_neuron_cores() == 2


def test_the_new_format_is_read_by_content_not_by_its_undocumented_key():
    report = json.loads((CANNED / "neuron-ls-output-format-json-inf2-24xlarge.json").read_text())
    renamed = {"instance": report["instance"], "devices": report.pop("neuron_devices")}
    assert hardware.parse_neuron_ls(json.dumps(renamed)) == [str(i) for i in range(12)]
    assert hardware.parse_neuron_ls(json.dumps({**report, "neuron_devices": []})) == []


def test_neuroncore_discovery_script_prefers_the_device_plugins_cores(fake_tools):
    fake_tools(neuron_ls=neuron_ls("neuron-ls-output-format-json-inf2-24xlarge.json"))
    done = _run_script("get_neuroncores.py", {"NEURON_RT_VISIBLE_CORES": "4-5,9"})
    assert json.loads(done.stdout) == {"name": "neuroncore", "addresses": ["4", "5", "9"]}


@pytest.mark.parametrize("canned", ["neuron-ls-j-inf2-xlarge.json", "neuron-ls-j-inf2-24xlarge.json", "neuron-ls-output-format-json-inf2-24xlarge.json"])
def test_neuroncore_discovery_script_refuses_to_guess_an_executors_core(fake_tools, canned):
    """A pod granted one core sees its whole device; without NEURON_RT_VISIBLE_CORES it must not pick one."""
    from emr.eks import EXECUTOR_NEURONCORES_ENV

    fake_tools(neuron_ls=(CANNED / canned).read_text())
    done = _run_script("get_neuroncores.py", {EXECUTOR_NEURONCORES_ENV: "1"})
    assert done.returncode == 1 and done.stdout == ""
    assert "asked for 1 NeuronCore(s) but sees" in done.stderr and "0,1" in done.stderr
    assert "NEURON_RT_VISIBLE_CORES is unset" in done.stderr and "scheduler extension" in done.stderr


def test_neuroncore_discovery_script_trusts_the_granted_core_or_an_exact_count(fake_tools):
    from emr.eks import EXECUTOR_NEURONCORES_ENV

    fake_tools(neuron_ls=(CANNED / "neuron-ls-j-inf2-xlarge.json").read_text())
    granted = _run_script("get_neuroncores.py", {EXECUTOR_NEURONCORES_ENV: "1", "NEURON_RT_VISIBLE_CORES": "1"})
    assert json.loads(granted.stdout) == {"name": "neuroncore", "addresses": ["1"]}
    whole_device = _run_script("get_neuroncores.py", {EXECUTOR_NEURONCORES_ENV: "2"})
    assert json.loads(whole_device.stdout) == {"name": "neuroncore", "addresses": ["0", "1"]}


def test_neuroncore_discovery_script_reads_the_variable_eks_submit_sets():
    from emr.eks import EXECUTOR_NEURONCORES_ENV

    assert f'EXECUTOR_NEURONCORES = "{EXECUTOR_NEURONCORES_ENV}"' in (SCRIPTS / "get_neuroncores.py").read_text()


def test_neuroncore_discovery_script_names_both_flags_when_neither_works(fake_tools):
    fake_tools(neuron_ls={})
    done = _run_script("get_neuroncores.py")
    assert done.returncode == 1 and done.stdout == ""
    assert "neuron-ls --output-format json failed (2)" in done.stderr and "neuron-ls -j failed (2)" in done.stderr


def test_neuroncore_discovery_script_fails_loudly_without_tools(fake_tools):
    fake_tools()
    done = _run_script("get_neuroncores.py")
    assert done.returncode == 1 and "neuron-ls" in done.stderr and done.stdout == ""


def test_discovery_scripts_are_executable_and_parse():
    for name in ("get_gpus.sh", "get_neuroncores.py"):
        assert os.access(SCRIPTS / name, os.X_OK), f"{name} must be executable for Spark"
    assert subprocess.run(["bash", "-n", str(SCRIPTS / "get_gpus.sh")]).returncode == 0


# ------------------------------------------------------------------ probes


def test_local_probes_use_the_tools(fake_tools):
    fake_tools(nvidia_smi=(CANNED / "nvidia-smi-4gpu.txt").read_text(),
               neuron_ls=neuron_ls("neuron-ls-output-format-json-inf2-24xlarge.json"))
    assert hardware.local_gpus() == 4
    assert hardware.local_neuron_cores() == 12
    assert hardware.neuron_device_present()


def test_instance_type_comes_from_the_host_not_from_neuron_ls(tmp_path, monkeypatch):
    """Nitro instances name their type in DMI; elsewhere instance metadata answers (engines/imds.py)."""
    product_name = tmp_path / "product_name"
    product_name.write_text("inf2.24xlarge\n")
    assert hardware.instance_type(str(product_name)) == "inf2.24xlarge"
    monkeypatch.setattr(hardware.imds, "this_host", lambda: "inf1.6xlarge")
    product_name.write_text("Standard PC (Q35 + ICH9, 2009)\n")  # not EC2 Nitro: ask metadata
    assert hardware.instance_type(str(product_name)) == "inf1.6xlarge"
    assert hardware.instance_type(str(tmp_path / "absent")) == "inf1.6xlarge"


def test_neuron_probe_counts_the_device_plugins_cores(fake_tools, monkeypatch):
    fake_tools()
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "2-3")
    assert hardware.local_neuron_cores() == 2
    assert not hardware.neuron_device_present()  # the variable alone is not a device


def test_parse_core_list():
    assert hardware.parse_core_list("3") == ["3"]
    assert hardware.parse_core_list("0-2, 5") == ["0", "1", "2", "5"]
    with pytest.raises(ValueError, match="not a NeuronCore list"):
        hardware.parse_core_list("nc0")


def test_hardware_counts_devices_per_engine_device_kind():
    hw = hardware.Hardware({"cuda": 2, "neuron": 0}, source="probe")
    assert hw == hardware.Hardware({"cuda": 2}, source="probe") and hw.any
    assert (hw.count("cuda"), hw.count("neuron"), hw.count("cpu")) == (2, 0, 1)
    assert not hardware.Hardware().any and hardware.Hardware().has("cpu")


def test_detect_probes_only_the_kinds_asked_for(monkeypatch):
    monkeypatch.setitem(hardware.PROBES, "cuda", lambda: 3)
    monkeypatch.setitem(hardware.PROBES, "neuron", lambda: pytest.fail("neuron was not asked for"))
    assert hardware.detect(["cpu", "cuda"]) == hardware.Hardware({"cuda": 3}, source="local")


def test_executors_are_what_the_application_requests_not_what_the_driver_has(monkeypatch):
    from jobs.stage_resources import executor_hardware

    gpu = {"spark.master": "yarn", "spark.executor.resource.gpu.amount": "1"}
    assert executor_hardware(gpu) == hardware.Hardware({"cuda": 1}, source="spark executor resources")
    cores = {"spark.master": "yarn", "spark.executor.resource.neuroncore.amount": "2"}
    assert executor_hardware(cores) == hardware.Hardware({"neuron": 2}, source="spark executor resources")
    nothing = executor_hardware({"spark.master": "yarn", "spark.executor.cores": "4"})  # the driver's own GPU says nothing
    assert not nothing.any and nothing.source == "no spark.executor.resource.{gpu,neuroncore}.amount requested"
    monkeypatch.setitem(hardware.PROBES, "cuda", lambda: 1)
    assert executor_hardware({"spark.master": "local[2]"}) == hardware.Hardware({"cuda": 1})  # tasks run here


def test_neuron_generations():
    assert hardware.neuron_generation("inf2.xlarge") == hardware.neuron_generation("trn1") == "v2"
    assert hardware.neuron_generation("inf1.6xlarge") == "v1" != hardware.neuron_generation("inf2")
    assert hardware.neuron_generation("g5.xlarge") is None


@pytest.mark.parametrize("address, visible, count, expected", [
    ("3", None, 1, 0),        # YARN isolation: the one visible GPU is ordinal 0 whatever its host index
    ("1", None, 4, 1),
    ("5", "4,5", 2, 1),       # CUDA_VISIBLE_DEVICES renumbers
    (None, None, 2, 0),
])
def test_cuda_ordinal(address, visible, count, expected):
    assert hardware.cuda_ordinal(address, visible, count) == expected


def test_cuda_ordinal_rejects_an_address_it_cannot_see():
    with pytest.raises(ValueError, match="not one of the 2 devices"):
        hardware.cuda_ordinal("7", None, 2)
    with pytest.raises(ValueError, match="no CUDA device"):
        hardware.cuda_ordinal("0", None, 0)


# ------------------------------------------------------------------ device binding


def test_task_resource_beats_explicit_device_beats_default():
    assert bind_device("tensorrt", "cuda:1", {"gpu": ["0"]}) == Device("cuda", "0")
    assert bind_device("tensorrt", "cuda:1", {}) == Device("cuda", "1")
    assert bind_device("tensorrt", None, {}) == Device("cuda")
    assert bind_device("neuronx", "neuron:0", {}) == Device("neuron", "0")
    assert bind_device("neuron", None, {"neuroncore": ["7"]}) == Device("neuron", "7")
    assert bind_device("onnx", None, {"gpu": ["0"]}) == Device()


def test_fractional_gpu_amount_gives_tasks_the_same_address():
    """spark.task.resource.gpu.amount=0.5: two tasks (two Python workers) share GPU "0".

    Each worker binds the same device and keys its engine cache by it, so the GPU holds two
    engines, one per worker (Triton-style instance groups)."""
    first = bind_device("tensorrt", None, {"gpu": ["0"]})
    second = bind_device("tensorrt", None, {"gpu": ["0"]})
    assert first == second == Device("cuda", "0") and str(first) == "cuda:0"


def test_explicit_device_must_fit_the_backend():
    with pytest.raises(ValueError, match="--device neuron:0 does not fit backend tensorrt"):
        bind_device("tensorrt", "neuron:0", {})
    with pytest.raises(ValueError, match="does not fit backend neuronx, which runs on neuron:N"):
        bind_device("neuronx", "cuda:0", {})
    assert parse_device("neuron") == Device("neuron")
