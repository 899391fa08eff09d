"""Neuron backends (neuronx on Inf2/Trn1, neuron on Inf1) against TEST DOUBLES of torch_neuronx /
torch_neuron (tests/doubles/): core pinning before the runtime import, one trace per bucket,
padding to compiled shapes, dynamic batch on dim 0, target and parity checks, clear errors.

Contract tests only: no Neuron compiler, runtime or device is involved. The `neuron`-marked
test at the end runs on an Inf2 machine with the real SDK and skips elsewhere.
"""
import dataclasses
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from engines import parity
from engines.base import Device
from engines.errors import ArtifactError, EngineUnavailableError, ParityError, TargetMismatchError
from engines.hardware import Hardware
from engines.neuron import NeuronEngine, NeuronxEngine, pin_core, versions_compatible
from engines.registry import resolve_backend
from engines.store import open_artifact
from tests.neuron_doubles import compile_neuron, neuron_doubles, without_neuron_sdk


@pytest.fixture(scope="module")
def neuronx(tiny_models, tmp_path_factory):
    out = tmp_path_factory.mktemp("neuronx") / "pairs-inf2"
    seen = compile_neuron(tiny_models, out, "neuronx")
    return out, seen


@pytest.fixture(scope="module")
def inf1(tiny_models, tmp_path_factory):
    out = tmp_path_factory.mktemp("neuron") / "pairs-inf1"
    seen = compile_neuron(tiny_models, out, "neuron")
    return out, seen


@pytest.fixture
def double(tmp_path):
    log = tmp_path / "neuron-imports.jsonl"
    with neuron_doubles(log):
        yield log


def _reference(tiny_models, feed):
    import torch
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(tiny_models["pair-classification"],
                                                               attn_implementation="eager").eval()
    with torch.no_grad():
        return model(**{k: torch.from_numpy(v) for k, v in feed.items()}).logits.numpy()


def _feed(batch, seq, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, 2000, (batch, seq))
    mask = np.ones_like(ids)
    mask[-1, seq // 2:] = 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


# ------------------------------------------------------------------ compile


def test_compile_traces_one_model_per_bucket_with_the_cast_type_explicit(neuronx):
    folder, seen = neuronx
    m = open_artifact(folder)
    assert (m.backend, m.precision, m.buckets) == ("neuronx", "bf16", ((4, 16), (2, 64)))
    assert {"neuronx/b4_s16.pt", "neuronx/b2_s64.pt", "parity/probes.npz"} <= set(m.files)
    assert [c["shape"] for c in seen["trace_calls"]] == [(4, 16), (2, 64)]
    args = seen["trace_calls"][0]["compiler_args"]
    assert args[:4] == ["--auto-cast", "matmult", "--auto-cast-type", "bf16"] and "--target" in args
    assert seen["trace_calls"][0]["cpu_backend"] is True  # no Neuron device here
    assert m.target == {**m.target, "device": "neuron", "runtime": "torch-neuronx", "instance": "inf2",
                        "version": "2.9.0.2.15.32035", "traced_without_device": True}
    assert m.parity["passed"] is True and m.parity["where"].startswith("at compile time")
    assert seen["env_after"]["NEURON_RT_VISIBLE_CORES"] is None  # compile left nothing pinned behind


def test_compile_inf1_uses_fp32_cast_and_dynamic_batch_size(inf1):
    folder, seen = inf1
    m = open_artifact(folder)
    assert m.backend == "neuron" and {"neuron/b4_s16.pt", "neuron/b2_s64.pt"} <= set(m.files)
    call = seen["trace_calls"][0]
    assert call["compiler_args"] == ["--fp32-cast", "matmult-bf16", "--fast-math", "no-fast-relayout"]
    assert call["dynamic_batch_size"] is True
    assert m.target["runtime"] == "torch-neuron" and m.target["instance"] == "inf1"


def test_trn2_is_refused_since_neuron_ended_torch_neuronx_inference_there(tiny_models, tmp_path, capsys):
    """Neuron 2.34 ended PyTorch/XLA inference on Trn2: an artifact for it would have no runtime."""
    from compiler import compile as compile_cli

    with neuron_doubles():
        rc = compile_cli.main(["--model", str(tiny_models["pair-classification"]), "--task", "pair-classification",
                               "--backend", "neuronx", "--neuron-target", "trn2", "--max-seq-len", "64",
                               "--buckets", "4x16,2x64", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert rc == 2 and not (tmp_path / "x").exists()
    assert "--neuron-target trn2: Neuron 2.34 ended torch-neuronx (PyTorch/XLA) inference on Trn2" in err


@pytest.mark.parametrize("backend, needs", [("neuronx", "torch-neuronx"), ("neuron", "torch-neuron")])
def test_compile_without_the_neuron_sdk_is_a_clear_error(tiny_models, tmp_path, capsys, backend, needs):
    """Inf1's torch-neuron cannot install next to torch >= 2.3 or on Python 3.11: its error says where it can."""
    import torch

    from compiler import compile as compile_cli

    mp = without_neuron_sdk()
    try:
        rc = compile_cli.main(["--model", str(tiny_models["pair-classification"]), "--task", "pair-classification",
                               "--backend", backend, "--out", str(tmp_path / "x")])
    finally:
        mp.undo()
    err = capsys.readouterr().err
    assert rc == 2 and not (tmp_path / "x").exists()
    assert f"compile --backend {backend} needs {needs}" in err
    if backend == "neuron":
        assert "own Python 3.10 environment with torch 1.13.1" in err and "'.[inf1]', not '.[compile]'" in err
        assert f"this is Python {sys.version_info[0]}.{sys.version_info[1]} with torch {torch.__version__}" in err


def test_inf1_extra_resolves_on_its_own_python_and_torch():
    """pyproject.toml's inf1 extra: torch-neuron 1.13.1's torch and Python, and a transformers and
    numpy that run on torch 1.13, all inside this project's own requirements."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
    inf1 = {r.name: r.specifier for r in map(Requirement, project["optional-dependencies"]["inf1"])}
    base = {r.name: r.specifier for r in map(Requirement, project["dependencies"])}
    assert inf1["torch-neuron"].contains("1.13.1.2.11.13.0") and inf1["neuron-cc"].contains("1.24.0.0")
    assert list(inf1["torch"].filter(["1.13.1", "2.3.0"])) == ["1.13.1"]
    assert inf1["transformers"].contains("4.47.1") and not inf1["transformers"].contains("4.48.0")
    assert (inf1["numpy"] & base["numpy"]).contains("1.26.4") and not inf1["numpy"].contains("2.0.0")
    assert SpecifierSet(project["requires-python"]).contains("3.10")  # torch-neuron's last Python


def test_neuron_buckets_must_cover_max_seq_len(tiny_models, tmp_path, capsys):
    from compiler import compile as compile_cli

    with neuron_doubles():
        rc = compile_cli.main(["--model", str(tiny_models["pair-classification"]), "--task", "pair-classification",
                               "--backend", "neuronx", "--out", str(tmp_path / "x"), "--buckets", "4x16"])
    assert rc == 1 and "must reach --max-seq-len 256" in capsys.readouterr().err


def test_without_a_neuron_runtime_at_compile_parity_is_recorded_as_skipped(tiny_models, tmp_path, monkeypatch):
    def no_device(self):
        raise EngineUnavailableError("no Neuron device")

    monkeypatch.setattr(NeuronxEngine, "_load", no_device)
    compile_neuron(tiny_models, tmp_path / "a")
    m = open_artifact(tmp_path / "a")
    assert m.parity["passed"] is None and m.parity["skipped"].startswith("no NeuronCore at compile time")


# ------------------------------------------------------------------ the engine


def test_core_is_pinned_before_the_runtime_is_imported(neuronx, double):
    folder, _ = neuronx
    engine = NeuronxEngine(folder, open_artifact(folder), Device("neuron", "3")).load()
    imports = [json.loads(l) for l in double.read_text().splitlines()]
    assert imports == [{"module": "torch_neuronx", "pid": os.getpid(), "NEURON_RT_VISIBLE_CORES": "3",
                        "NEURON_RT_NUM_CORES": None}]
    assert sys.modules["torch_neuronx"].IMPORT_RECORD["NEURON_RT_VISIBLE_CORES"] == "3"
    assert engine.parity_record["passed"] is True  # checked against the stored probes on load
    engine.close()


def test_inputs_are_padded_to_the_bucket_and_batched_on_dim0(neuronx, double, tiny_models):
    folder, _ = neuronx
    engine = NeuronxEngine(folder, open_artifact(folder), Device("neuron", "0")).load()
    assert engine.spec.static_shapes and engine.spec.buckets == ((4, 16), (2, 64))
    for batch, seq in ((3, 10), (9, 16), (5, 40), (1, 64)):  # under, over and at the compiled batch
        feed = _feed(batch, seq, seed=batch)
        np.testing.assert_allclose(engine.infer(feed), _reference(tiny_models, feed), atol=1e-5)
    with pytest.raises(ValueError, match="exceeds the largest compiled bucket"):
        engine.infer(_feed(2, 80))
    engine.close()


def test_the_double_enforces_compiled_shapes(neuronx, double):
    """Without our padding the saved model refuses another sequence length, as a NEFF does."""
    import torch

    folder, _ = neuronx
    model = torch.jit.load(str(folder / "neuronx" / "b4_s16.pt"))
    feed = _feed(4, 10)
    with pytest.raises(Exception, match=r"non-batch dims \(10,\) != compiled \(16,\)"):  # ValueError in TorchScript
        model(*(torch.from_numpy(feed[k]) for k in ("input_ids", "attention_mask", "token_type_ids")))


def test_dynamic_batch_is_saved_in_the_bucket_files(neuronx, double, tiny_models, monkeypatch):
    """torch_neuronx.dynamic_batch is applied to the trace before torch.jit.save, as the Neuron docs
    show, so a loaded bucket takes any batch size and the engine does not wrap it again."""
    import torch
    import torch_neuronx  # the double

    folder, _ = neuronx
    model = torch.jit.load(str(folder / "neuronx" / "b4_s16.pt"))
    feed = _feed(9, 16)
    with torch.no_grad():
        got = model(*(torch.from_numpy(feed[k]) for k in ("input_ids", "attention_mask", "token_type_ids")))
    np.testing.assert_allclose(got.numpy(), _reference(tiny_models, feed), atol=1e-5)

    def not_at_load(neuron_script):
        raise AssertionError("dynamic_batch belongs to compile time, not to a module from torch.jit.load")

    monkeypatch.setattr(torch_neuronx, "dynamic_batch", not_at_load)
    NeuronxEngine(folder, open_artifact(folder), Device("neuron", "0")).load().close()


def test_inf1_engine_runs_dynamic_batch(inf1, double, tiny_models):
    folder, _ = inf1
    engine = NeuronEngine(folder, open_artifact(folder), Device("neuron", "1")).load()
    feed = _feed(7, 12)
    np.testing.assert_allclose(engine.infer(feed), _reference(tiny_models, feed), atol=1e-5)
    assert sys.modules["torch_neuron"].IMPORT_RECORD["NEURON_RT_VISIBLE_CORES"] == "1"
    engine.close()


def test_a_worker_cannot_move_to_another_core(neuronx, double):
    folder, _ = neuronx
    m = open_artifact(folder)
    NeuronxEngine(folder, m, Device("neuron", "3")).load().close()
    with pytest.raises(EngineUnavailableError, match=r"already runs the Neuron runtime on NeuronCore\(s\) 3"):
        NeuronxEngine(folder, m, Device("neuron", "4")).load()
    NeuronxEngine(folder, m, Device("neuron", "3")).load().close()  # the same core again is fine


def test_target_version_mismatch_is_refused(neuronx, double):
    folder, _ = neuronx
    m = open_artifact(folder)
    older = dataclasses.replace(m, target={**m.target, "version": "2.9.0.2.13.1"})
    with pytest.raises(TargetMismatchError, match="traced with torch-neuronx 2.9.0.2.13.1; this worker has 2.9.0.2.15"):
        NeuronxEngine(folder, older, Device("neuron", "0")).load()
    with pytest.raises(TargetMismatchError, match="not a torch-neuron build"):
        NeuronEngine(folder, m, Device("neuron", "0")).load()


def test_the_hosts_instance_type_decides_the_neuroncore_generation(neuronx, double, monkeypatch):
    """The artifact's target is compared with this host's instance type (engines/hardware.py), which
    neuron-ls does not print per device."""
    from engines import hardware

    folder, _ = neuronx
    monkeypatch.setattr(hardware, "instance_type", lambda: "inf1.6xlarge")
    with pytest.raises(TargetMismatchError, match=r"compiled for inf2 \(NeuronCore v2\); this is a inf1.6xlarge"):
        NeuronxEngine(folder, open_artifact(folder), Device("neuron", "0")).load()
    monkeypatch.setattr(hardware, "instance_type", lambda: "trn1.2xlarge")  # the same generation
    NeuronxEngine(folder, open_artifact(folder), Device("neuron", "0")).load().close()


def test_failed_parity_on_the_core_is_refused(neuronx, double, monkeypatch):
    folder, _ = neuronx
    monkeypatch.setitem(parity.SCORE_P99, "bf16", -1.0)
    with pytest.raises(ParityError, match="failed parity on this NeuronCore"):
        NeuronxEngine(folder, open_artifact(folder), Device("neuron", "0")).load()


def test_without_the_runtime_the_error_names_it_and_the_fix(neuronx):
    folder, _ = neuronx
    mp = without_neuron_sdk()
    try:
        with pytest.raises(EngineUnavailableError, match="backend neuronx needs torch-neuronx.*neuronx extra .torch-neuronx and neuronx-cc of one Neuron release"):
            NeuronxEngine(folder, open_artifact(folder), Device("neuron", "0")).load()
    finally:
        mp.undo()
        os.environ.pop("NEURON_RT_VISIBLE_CORES", None)


def test_a_runtime_failure_on_a_machine_without_neuron_devices_says_so(neuronx, double, monkeypatch):
    import torch

    folder, _ = neuronx

    def neff_load_fails(*a, **k):
        raise RuntimeError("nrt_init failed")

    monkeypatch.setattr(torch.jit, "load", neff_load_fails)
    with pytest.raises(EngineUnavailableError, match="no Neuron device .*nrt_init failed.*Inf2/Trn1"):
        NeuronxEngine(folder, open_artifact(folder), Device("neuron", "0")).load()


# ------------------------------------------------------------------ pure helpers


def test_pin_core_sets_the_variable_only_before_the_runtime_loads():
    env, modules = {}, {}
    assert pin_core("2", "torch_neuronx", env, modules) == "2" and env == {"NEURON_RT_VISIBLE_CORES": "2"}
    env = {}
    assert pin_core(None, "torch_neuronx", env, modules) is None and env == {"NEURON_RT_NUM_CORES": "1"}
    env = {"NEURON_RT_VISIBLE_CORES": "4-5"}  # the device plugin's grant: narrowed to Spark's core
    assert pin_core("5", "torch_neuronx", env, modules) == "5" and env["NEURON_RT_VISIBLE_CORES"] == "5"
    with pytest.raises(EngineUnavailableError, match="Spark assigned NeuronCore 1, but NEURON_RT_VISIBLE_CORES=4-5"):
        pin_core("1", "torch_neuronx", {"NEURON_RT_VISIBLE_CORES": "4-5"}, modules)
    env = {"NEURON_RT_VISIBLE_CORES": "2"}
    assert pin_core("2", "torch_neuronx", env, {"torch_neuronx": object()}) == "2"


def test_versions_compatible():
    assert versions_compatible("2.9.0.2.15.32035", "2.9.1.2.15.40000")
    assert not versions_compatible("2.9.0.2.15.32035", "2.9.0.2.16.1")
    assert not versions_compatible("2.8.0.2.15.1", "2.9.0.2.15.1")
    assert versions_compatible("1.13.1.2.11.13.0", "1.13.1.2.11.7.0")
    assert not versions_compatible("unknown", "2.9.0.2.15.1")


def test_auto_needs_a_neuroncore_for_neuron_artifacts(neuronx):
    m = open_artifact(neuronx[0])
    assert resolve_backend("auto", m, Hardware({"neuron": 2})) == "neuronx"
    with pytest.raises(ArtifactError, match="needs a NeuronCore, and none was found .*no model.onnx"):
        resolve_backend("auto", m, Hardware())
    with pytest.raises(ArtifactError, match="--backend neuron cannot run it"):
        resolve_backend("neuron", m)


# ------------------------------------------------------------------ on an Inf2 machine


def _real_neuronx() -> bool:
    from engines.hardware import neuron_device_present

    try:
        import torch_neuronx
    except ImportError:
        return False
    return not getattr(torch_neuronx, "IS_TEST_DOUBLE", False) and neuron_device_present()


@pytest.mark.neuron
@pytest.mark.skipif(not _real_neuronx(), reason="needs torch-neuronx and a Neuron device")
def test_real_neuronx_compile_and_run(tiny_models, tmp_path):
    from compiler import compile as compile_cli

    out = tmp_path / "real"
    assert compile_cli.main(["--model", str(tiny_models["pair-classification"]), "--task", "pair-classification",
                             "--backend", "neuronx", "--out", str(out), "--max-seq-len", "64",
                             "--buckets", "4x16,2x64"]) == 0
    assert open_artifact(out).parity["passed"] is True
