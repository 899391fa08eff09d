"""TensorRT backend: what is ours is tested on the CPU (profiles, cache keys and locking, the build
call sequence against a recording fake, target checks, the compile step, clear errors); the
`gpu`-marked tests build and run real plans and skip without CUDA and TensorRT.
"""
import dataclasses
import importlib.abc
import json
import os
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import numpy as np
import pytest

from engines import trt_build
from engines.base import Device
from engines.errors import ArtifactError, EngineUnavailableError, TargetMismatchError
from engines.hardware import Hardware
from engines.registry import BackendFallbackWarning, resolve_backend
from engines.store import open_artifact
from engines.tensorrt import check_target
from tests.fake_tensorrt import (PINNED, FakeCuda, FakeTensorRT, IBuilderConfig, IExecutionContext, RecordingTrt,
                                 fake_torch, plan_bytes)

ROOT = Path(__file__).resolve().parent.parent


def _cuda_and_tensorrt() -> bool:
    try:
        import tensorrt  # noqa: F401
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def requires_cuda(test):
    """Marks a test `gpu` and skips it unless CUDA and TensorRT are both usable here."""
    return pytest.mark.gpu(pytest.mark.skipif(not _cuda_and_tensorrt(), reason="needs a CUDA GPU and TensorRT")(test))


# ------------------------------------------------------------------ profiles


def test_one_profile_per_bucket_covering_every_length():
    profiles = trt_build.profiles_for([(128, 32), (64, 64), (32, 128)], max_seq_len=128, max_tokens=8192)
    assert [(p.min, p.opt, p.max) for p in profiles] == [
        ((1, 1), (128, 32), (256, 32)),
        ((1, 33), (64, 64), (128, 64)),
        ((1, 65), (32, 128), (64, 128)),
    ]
    for seq in range(1, 129):  # every padded length lands in exactly one profile
        assert sum(p.min[1] <= seq <= p.max[1] for p in profiles) == 1
        assert profiles[trt_build.profile_index(profiles, seq)].covers(1, seq)
    with pytest.raises(ValueError, match="outside every TensorRT profile"):
        trt_build.profile_index(profiles, 129)


def test_profiles_reach_max_seq_len_and_clip_longer_buckets():
    profiles = trt_build.profiles_for([(16, 64), (4, 512)], max_seq_len=100, max_tokens=4096)
    assert [p.max_seq for p in profiles] == [64, 100]
    assert profiles[-1].opt == (4, 100) and profiles[-1].max_batch == 40
    with pytest.raises(ValueError, match="at least one"):
        trt_build.profiles_for([], 128)


def test_build_spec_round_trips():
    spec = trt_build.BuildSpec(onnx="tensorrt/model.fp16.onnx", precision="fp16",
                               profiles=tuple(trt_build.profiles_for([(32, 128)], 128)))
    assert trt_build.BuildSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    with pytest.raises(ValueError, match="precision must be one of"):
        dataclasses.replace(spec, precision="int8")


# ------------------------------------------------------------------ cache keys and locking


def _spec(precision="fp16", buckets=((32, 128),)):
    return trt_build.BuildSpec(onnx="m.onnx", precision=precision, profiles=tuple(trt_build.profiles_for(buckets, 128)))


def test_plan_cache_key_changes_with_everything_that_shapes_a_plan():
    def key(version="10.9.0", gpu="NVIDIA A10G", cc=(8, 6), spec=None, onnx="a" * 64):
        return trt_build.plan_cache_key(version, gpu, cc, spec or _spec(), onnx)

    base = key()
    assert base.startswith("trt10.9.0-sm86-NVIDIA_A10G-fp16-") and base == key()
    others = {key(version="10.9.1"), key(cc=(8, 9)), key(spec=_spec("fp32")), key(spec=_spec(buckets=((16, 128),))),
              key(onnx="b" * 64), key(gpu="NVIDIA RTX A6000")}
    assert base not in others and len(others) == 6


def test_gpus_sharing_a_compute_capability_get_their_own_plans():
    """L4 and L40S are both 8.9; TensorRT tunes kernels per device, so one's plan is not the other's."""
    l4 = trt_build.plan_cache_key("10.9.0", "NVIDIA L4", (8, 9), _spec(), "a" * 64)
    l40s = trt_build.plan_cache_key("10.9.0", "NVIDIA L40S", (8, 9), _spec(), "a" * 64)
    assert l4 != l40s and "NVIDIA_L4-" in l4 and "NVIDIA_L40S-" in l40s


def test_cached_plan_builds_once_under_concurrent_workers(tmp_path):
    calls = []

    def build():
        calls.append(threading.get_ident())
        time.sleep(0.3)  # long enough for every other thread to reach the lock
        return b"plan-bytes"

    results = []
    threads = [threading.Thread(target=lambda: results.append(trt_build.cached_plan("k", build, tmp_path)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert sorted(how for _, how in results) == ["built", "cache", "cache", "cache"]
    assert {p.read_bytes() for p, _ in results} == {b"plan-bytes"}
    assert not list(tmp_path.glob(".*tmp"))  # the temporary file was renamed into place


def test_cached_plan_locks_across_processes(tmp_path):
    """Two worker processes race for one key: one builds, the other waits and reuses it."""
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); from engines import trt_build\n"
        "def build():\n"
        "    open(sys.argv[3], 'a').write('built\\n'); time.sleep(0.5); return b'p'\n"
        "print(trt_build.cached_plan('key', build, sys.argv[2])[1])\n"
    )
    log = tmp_path / "builds.log"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(ROOT), str(tmp_path / "cache"), str(log)],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = sorted(p.communicate(timeout=60)[0].strip() for p in procs)
    assert outs == ["built", "cache"] and log.read_text() == "built\n"


def test_plan_shipped_in_the_artifact_wins(tmp_path):
    shipped = tmp_path / "plans"
    shipped.mkdir()
    (shipped / "k.plan").write_bytes(b"shipped")
    path, how = trt_build.cached_plan("k", lambda: pytest.fail("must not build"), tmp_path / "cache", shipped)
    assert how == "artifact" and path.read_bytes() == b"shipped"


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ACCEL_SCORING_CACHE", str(tmp_path))
    assert trt_build.cache_root() == tmp_path / "tensorrt"
    monkeypatch.delenv("ACCEL_SCORING_CACHE")
    assert trt_build.cache_root() == Path("/tmp/accel-scoring-cache/tensorrt")


# ------------------------------------------------------------------ the build, against a recording fake


@pytest.mark.parametrize("version", PINNED)
def test_build_is_strongly_typed_with_a_profile_per_input_and_bucket(tmp_path, version):
    trt = RecordingTrt(version=version)
    spec = dataclasses.replace(_spec(buckets=((64, 64), (32, 128))), workspace_mib=1024, optimization_level=2)
    assert trt_build.build_serialized(trt, tmp_path / "m.onnx", spec) == b"serialized"
    # 10.x: the STRONGLY_TYPED creation flag (1); 11 is always strongly typed and deprecates it: none.
    assert ("create_network", {"10": 1 << 1, "11": 0}[version[:2]]) in trt.calls
    assert trt.config.flags == {trt.BuilderFlag.TF32}  # TensorRT's default, untouched: precision comes from the graph
    assert trt.config.pools == {trt.MemoryPoolType.WORKSPACE: 1024 << 20} and trt.config.builder_optimization_level == 2
    assert [p.shapes["input_ids"] for p in trt.config.profiles] == [
        ((1, 1), (64, 64), (256, 64)), ((1, 65), (32, 128), (128, 128))]
    assert all(set(p.shapes) == {"input_ids", "attention_mask", "token_type_ids"} for p in trt.config.profiles)


def test_a_refused_optimisation_profile_is_a_build_error(tmp_path, monkeypatch):
    monkeypatch.setattr(IBuilderConfig, "add_optimization_profile", lambda self, profile: -1)  # TensorRT's refusal
    with pytest.raises(trt_build.BuildError, match="refused optimisation profile"):
        trt_build.build_serialized(RecordingTrt(), tmp_path / "m.onnx", _spec())


def test_build_errors_carry_the_parsers_messages(tmp_path):
    with pytest.raises(trt_build.BuildError, match="GatherND"):
        trt_build.build_serialized(RecordingTrt(parse_ok=False), tmp_path / "m.onnx", _spec())
    with pytest.raises(trt_build.BuildError, match="failed to build"):
        trt_build.build_serialized(RecordingTrt(plan=None), tmp_path / "m.onnx", _spec())


# ------------------------------------------------------------------ target checks


def test_target_checks_compute_capability_and_version():
    target = {"device": "cuda", "tensorrt_min": "10.4", "tensorrt_below": "12", "min_compute_capability": [8, 0]}
    check_target(target, "10.9.0.34", (8, 6), "bf16")
    with pytest.raises(TargetMismatchError, match="compute capability 7.5.*needs >= 8.0"):
        check_target(target, "10.9.0", (7, 5), "bf16")
    with pytest.raises(TargetMismatchError, match="TensorRT 10.3.0 is installed"):
        check_target(target, "10.3.0", (8, 6), "bf16")
    with pytest.raises(TargetMismatchError, match="not 'cuda'"):
        check_target({"device": "neuron"}, "10.9.0", (8, 6), "fp16")


def test_one_tensorrt_range_that_includes_11():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["gpu"] == [trt_build.TENSORRT_REQUIREMENT]
    target = {"device": "cuda", "tensorrt_min": trt_build.TENSORRT_MIN, "tensorrt_below": trt_build.TENSORRT_BELOW}
    for version in ("10.4.0", "10.16.1.11", "11.0.0.114", "11.4.0.106"):
        check_target(target, version, (8, 6), "fp16")
    script = (ROOT / "bench" / "device_check.sh").read_text()
    assert "tensorrt-cu12" not in script  # the device check installs nothing, and copies no TensorRT range


# ------------------------------------------------------------------ compile, registry, errors (CPU)


@pytest.fixture(scope="module")
def trt_artifact(compile_artifact):
    return compile_artifact("pair-classification", "tensorrt")


def test_compile_writes_graph_build_spec_and_honest_parity(trt_artifact):
    m = open_artifact(trt_artifact)
    assert (m.backend, m.precision) == ("tensorrt", "fp16")
    assert {"model.onnx", "tensorrt/model.fp16.onnx", "tensorrt/build.json", "parity/probes.npz"} <= set(m.files)
    assert m.target["device"] == "cuda" and m.target["min_compute_capability"] == [7, 5]
    assert (m.target["tensorrt_min"], m.target["tensorrt_below"]) == (trt_build.TENSORRT_MIN, trt_build.TENSORRT_BELOW)
    assert m.parity["passed"] is None and m.parity["skipped"] == "no GPU at compile time; checked on first build"
    assert m.parity["onnx_fp32"]["passed"] is True and m.parity["onnx_fp32"]["max_abs_diff"] <= 1e-4
    assert m.parity["onnx_fp16_cpu"]["passed"] is True
    spec = trt_build.BuildSpec.read(trt_artifact)
    assert spec.onnx == "tensorrt/model.fp16.onnx" and spec.profiles[-1].max_seq == m.max_seq_len
    assert [p.opt for p in spec.profiles] == list(m.buckets)


def test_fp16_and_bf16_graphs_keep_fp32_io_and_norms(trt_artifact, tmp_path):
    import onnx
    from onnx import TensorProto

    from compiler.onnx_precision import convert_precision

    convert_precision(trt_artifact / "model.onnx", tmp_path / "bf16.onnx", "bf16")
    for path, half in ((trt_artifact / "tensorrt/model.fp16.onnx", TensorProto.FLOAT16),
                       (tmp_path / "bf16.onnx", TensorProto.BFLOAT16)):
        model = onnx.load(str(path))
        onnx.checker.check_model(model, full_check=True)
        assert [i.type.tensor_type.elem_type for i in model.graph.input] == [TensorProto.INT64] * 3
        assert model.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT
        types_used = {t.data_type for t in model.graph.initializer}
        assert half in types_used and ({TensorProto.FLOAT16, TensorProto.BFLOAT16} - {half}).isdisjoint(types_used)
        norms = [n for n in model.graph.node if n.op_type == "LayerNormalization"]
        inits = {t.name: t.data_type for t in model.graph.initializer}
        assert norms and all(inits.get(n.input[1], TensorProto.FLOAT) == TensorProto.FLOAT for n in norms)


def test_bf16_weights_round_to_nearest(tmp_path, trt_artifact):
    import onnx
    from onnx import numpy_helper

    from compiler.onnx_precision import convert_precision

    convert_precision(trt_artifact / "model.onnx", tmp_path / "bf16.onnx", "bf16")
    fp32 = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(trt_artifact / "model.onnx")).graph.initializer}
    for t in onnx.load(str(tmp_path / "bf16.onnx")).graph.initializer:
        if t.data_type != onnx.TensorProto.BFLOAT16 or t.name not in fp32:
            continue
        bits = np.frombuffer(t.raw_data, dtype=np.uint16).astype(np.uint32) << 16
        values = bits.view(np.float32).reshape(fp32[t.name].shape)
        ref = np.clip(fp32[t.name], -3.3895313892515355e38, 3.3895313892515355e38)  # mask fill stays finite
        assert np.isfinite(values).all() and np.allclose(values, ref, rtol=2 ** -8, atol=1e-38), t.name


def test_bf16_rounds_to_nearest_even_clamps_and_keeps_scalars_scalar():
    from compiler.onnx_precision import BF16_MAX, bf16_tensor

    rng = np.random.default_rng(0)
    values = np.concatenate([rng.normal(size=4000).astype(np.float32) * np.float32(10.0) ** rng.integers(-40, 38, 4000),
                             np.array([np.finfo(np.float32).max, -np.finfo(np.float32).max, 0.0, 1e-45,
                                       1 + 2 ** -8, 1 + 3 * 2 ** -8], np.float32)]).astype(np.float32)
    bits = np.clip(values, -BF16_MAX, BF16_MAX).view(np.uint32)
    nearest_even = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # ties (1 + 2**-8) go to even
    assert np.frombuffer(bf16_tensor("w", values).raw_data, dtype=np.uint16).tolist() == nearest_even.tolist()
    assert list(bf16_tensor("s", np.array(0.5, np.float32)).dims) == []  # a scalar stays rank 0


def test_bf16_graph_wiring_matches_when_widened_back_to_fp32(tmp_path, trt_artifact):
    """ONNX Runtime has no CPU bf16 kernels; widening every bf16 tensor back to fp32 runs the
    converted graph's wiring (casts, blocked norms) with bf16-rounded weights."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, numpy_helper

    from compiler.onnx_precision import convert_precision
    from engines import parity

    convert_precision(trt_artifact / "model.onnx", tmp_path / "bf16.onnx", "bf16")
    model = onnx.load(str(tmp_path / "bf16.onnx"))

    def widen(t):
        bits = np.frombuffer(t.raw_data, dtype=np.uint16).astype(np.uint32) << 16
        return numpy_helper.from_array(bits.view(np.float32).reshape(tuple(t.dims)), t.name)

    for i, t in enumerate(list(model.graph.initializer)):
        if t.data_type == TensorProto.BFLOAT16:
            model.graph.initializer[i].CopyFrom(widen(t))
    for node in model.graph.node:
        for attr in node.attribute:
            if attr.name == "to" and attr.i == TensorProto.BFLOAT16:
                attr.i = TensorProto.FLOAT
            elif attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type == TensorProto.BFLOAT16:
                attr.t.CopyFrom(widen(attr.t))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    batches, refs = parity.load_probes(trt_artifact / parity.PROBES_FILE)
    gots = [session.run(["logits"], feed)[0] for feed in batches]
    record = parity.compare(refs, gots, "pair-classification", "bf16")
    assert record["passed"] and record["label_agreement"] == 1.0, record


def test_auto_uses_the_gpu_when_there_is_one_and_falls_back_with_a_warning(trt_artifact):
    m = open_artifact(trt_artifact)
    assert resolve_backend("auto", m, Hardware({"cuda": 1})) == "tensorrt"
    with pytest.warns(BackendFallbackWarning, match="no NVIDIA GPU found .*falls back to ONNX Runtime"):
        assert resolve_backend("auto", m, Hardware()) == "onnx"
    # NeuronCores requested: a job meant for an accelerator fails instead of crawling on the CPU.
    with pytest.raises(ArtifactError, match=r"needs a NVIDIA GPU, and none was found \(local: 2 neuroncore\); "
                                            r"request one .*spark\.executor\.resource\.gpu\.amount.*--backend onnx"):
        resolve_backend("auto", m, Hardware({"neuron": 2}))
    assert resolve_backend("onnx", m) == "onnx"  # the artifact carries model.onnx
    assert resolve_backend("tensorrt", m) == "tensorrt"
    with pytest.raises(ArtifactError, match="--backend neuronx cannot run it"):
        resolve_backend("neuronx", m)


def test_onnx_artifacts_do_not_run_on_tensorrt(compile_artifact):
    m = open_artifact(compile_artifact("pair-classification"))
    with pytest.raises(ArtifactError, match="compiled for backend 'onnx'; --backend tensorrt cannot run it"):
        resolve_backend("tensorrt", m)
    assert resolve_backend("auto", m, Hardware({"cuda": 8})) == "onnx"  # auto never changes an artifact's numerics


def test_without_tensorrt_the_error_names_what_is_missing_and_the_fix(trt_artifact, monkeypatch):
    from engines.tensorrt import TensorRTEngine

    monkeypatch.setitem(sys.modules, "tensorrt", None)  # import tensorrt -> ImportError
    engine = TensorRTEngine(trt_artifact, open_artifact(trt_artifact), Device("cuda", "0"))
    with pytest.raises(EngineUnavailableError, match=r"needs tensorrt, not importable .*gpu extra.*Installing on executors"):
        engine.load()


def test_cuda_numbers_gpus_like_nvidia_smi_before_torch_is_imported(trt_artifact, monkeypatch):
    """Spark's GPU addresses are nvidia-smi indices; CUDA fixes its order when it initialises."""
    from engines.tensorrt import TensorRTEngine

    seen = []

    class Torch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "torch":
                seen.append(os.environ.get("CUDA_DEVICE_ORDER"))
                raise ImportError("stop before torch")
            return None

    monkeypatch.setenv("CUDA_DEVICE_ORDER", "FASTEST_FIRST")
    monkeypatch.delitem(sys.modules, "torch")
    monkeypatch.setitem(sys.modules, "tensorrt", None)
    monkeypatch.setattr(sys, "meta_path", [Torch(), *sys.meta_path])
    engine = TensorRTEngine(trt_artifact, open_artifact(trt_artifact), Device("cuda", "0"))
    with pytest.raises(EngineUnavailableError, match="needs torch and tensorrt"):
        engine.load()
    assert seen == ["PCI_BUS_ID"]


@pytest.mark.skipif(_cuda_and_tensorrt(), reason="checks the no-GPU message")
def test_without_a_gpu_the_error_says_so(trt_artifact, monkeypatch):
    pytest.importorskip("torch")
    from engines.tensorrt import TensorRTEngine

    monkeypatch.setitem(sys.modules, "tensorrt", types.ModuleType("tensorrt"))
    engine = TensorRTEngine(trt_artifact, open_artifact(trt_artifact), Device("cuda", "0"))
    with pytest.raises(EngineUnavailableError, match="needs a CUDA GPU.*--backend onnx"):
        engine.load()


def test_compile_rejects_options_that_do_not_fit_the_backend(tiny_models, tmp_path, capsys):
    from compiler import compile as compile_cli

    base = ["--model", str(tiny_models["pair-classification"]), "--task", "pair-classification", "--out", str(tmp_path / "x")]
    assert compile_cli.main(base + ["--backend", "onnx", "--precision", "fp16"]) == 2
    assert "--precision fp16 is not available for --backend onnx" in capsys.readouterr().err
    assert compile_cli.main(base + ["--backend", "onnx", "--build"]) == 2
    assert "--build only applies to --backend tensorrt" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


# ------------------------------------------------------------------ on a GPU


@requires_cuda
def test_plan_builds_runs_and_matches_onnx_runtime(trt_artifact, tmp_path, monkeypatch):
    from engines.registry import engine_class

    monkeypatch.setenv("ACCEL_SCORING_CACHE", str(tmp_path))
    m = open_artifact(trt_artifact)
    engine = engine_class("tensorrt")(trt_artifact, m, Device("cuda", "0")).load()
    assert engine.plan_source == "built" and engine.parity_record["passed"] is True
    cpu = engine_class("onnx")(trt_artifact, m).load()
    rng = np.random.default_rng(0)
    for batch, seq in ((1, 8), (7, 40), (300, 64), (33, 128)):  # 300 rows exceed the profile: split
        ids = rng.integers(1000, 2000, (batch, seq))
        mask = np.ones_like(ids)
        mask[:, seq // 2:] = rng.integers(0, 2, (batch, seq - seq // 2))
        mask[:, 0] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        np.testing.assert_allclose(engine.submit(feed).result(), cpu.infer(feed), atol=2e-2)
    again = engine_class("tensorrt")(trt_artifact, m, Device("cuda", "0")).load()
    assert again.plan_source == "cache"
    engine.close()
    again.close()


@requires_cuda
def test_compile_build_ships_a_checked_plan(tiny_models, tmp_path):
    from compiler import compile as compile_cli

    out = tmp_path / "built"
    assert compile_cli.main(["--model", str(tiny_models["pair-classification"]), "--task", "pair-classification",
                             "--backend", "tensorrt", "--build", "--out", str(out), "--max-seq-len", "64"]) == 0
    m = open_artifact(out)
    assert m.parity["passed"] is True and any(f.startswith("tensorrt/plans/") for f in m.files)


# ------------------------------------------------------------------ the runtime path, on an emulated GPU


def _emulate(monkeypatch, tmp_path, input_dtype="INT32", version=PINNED[1], **gpu):
    """TensorRTEngine with tests/fake_tensorrt.py standing in for tensorrt and torch.cuda; `gpu` goes to FakeCuda."""
    cuda = FakeCuda(**gpu)
    trt = FakeTensorRT(cuda, input_dtype=input_dtype, version=version)
    monkeypatch.setattr("engines.tensorrt._import_runtime", lambda: (trt, fake_torch(cuda)))
    builds = []

    def build(trt_module, onnx_path, spec, names, logger):
        builds.append(Path(onnx_path).name)
        return plan_bytes(onnx_path, spec.profiles, names, spec.version_compatible)

    monkeypatch.setattr(trt_build, "build_serialized", build)
    monkeypatch.setenv("ACCEL_SCORING_CACHE", str(tmp_path / "cache"))
    return trt, builds


@pytest.fixture(params=[("INT32", PINNED[1]), ("INT64", PINNED[2])], ids=lambda p: f"{p[0]}-trt{p[1]}")
def emulated_gpu(request, monkeypatch, tmp_path):
    return _emulate(monkeypatch, tmp_path, *request.param)


def _random_feed(rng, batch, seq):
    ids = rng.integers(1000, 2000, (batch, seq))
    mask = np.ones_like(ids)
    mask[-1, max(1, seq // 2):] = 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def test_runtime_path_builds_once_switches_profiles_splits_and_pipelines(trt_artifact, emulated_gpu):
    from engines.registry import engine_class
    from engines.tensorrt import TensorRTEngine

    trt, builds = emulated_gpu
    m = open_artifact(trt_artifact)
    engine = TensorRTEngine(trt_artifact, m, Device("cuda", "0")).load()
    assert engine.plan_source == "built" and builds == ["model.fp16.onnx"]
    assert engine.parity_record["passed"] is True  # the stored probes, through the emulated runtime
    cpu = engine_class("onnx")(trt_artifact, m).load()
    rng = np.random.default_rng(0)
    shapes = [(1, 8), (7, 40), (600, 32), (33, 128), (2, 64), (5, 8)]
    trt.executions.clear()
    handles = [(feed, engine.submit(feed)) for feed in (_random_feed(rng, b, s) for b, s in shapes)]
    for feed, handle in handles:  # more submitted than slots: earlier results must survive reuse
        np.testing.assert_allclose(handle.result(), cpu.infer(feed), atol=1e-3)
    assert [p for p, _ in trt.executions] == [0, 1, 0, 0, 2, 1, 0]
    assert [s for p, s in trt.executions if s[1] == 32] == [(512, 32), (88, 32)]  # split at the profile's max
    again = TensorRTEngine(trt_artifact, m, Device("cuda", "0")).load()
    assert again.plan_source == "cache" and len(builds) == 1
    engine.close()
    again.close()


def test_scorer_keeps_two_batches_in_flight_on_the_emulated_gpu(trt_artifact, emulated_gpu):
    from engines.registry import engine_class
    from engines.tensorrt import TensorRTEngine
    from udfs.execute import run_encoded
    from udfs.tokenize import Encoded

    m = open_artifact(trt_artifact)
    engine = TensorRTEngine(trt_artifact, m, Device("cuda", "0")).load()
    rng = np.random.default_rng(1)
    lengths = rng.integers(3, 129, 300)
    enc = Encoded([rng.integers(1000, 2000, n) for n in lengths], [np.zeros(n, dtype=np.int64) for n in lengths],
                  np.zeros(len(lengths), bool))
    got = run_encoded(engine, enc, token_budget=2048)
    want = run_encoded(engine_class("onnx")(trt_artifact, m).load(), enc, token_budget=2048)
    assert all(e is None for e in got.errors)
    np.testing.assert_allclose(got.outputs, want.outputs, atol=1e-3)


def test_the_emulated_context_refuses_what_tensorrt_refuses_and_keeps_its_state():
    plan = {"inputs": ["input_ids"], "profiles": [{"min": [1, 1], "max": [8, 32]}, {"min": [1, 33], "max": [4, 64]}]}
    ctx = IExecutionContext(types.SimpleNamespace(plan=plan, names=["input_ids", "logits"]))
    assert ctx.set_input_shape("input_ids", (8, 32)) and not ctx.set_input_shape("input_ids", (9, 32))
    assert not ctx.set_input_shape("input_ids", (1, 40)) and ctx.shapes == {"input_ids": (8, 32)}
    assert ctx.set_tensor_address("input_ids", 4096) and not ctx.set_tensor_address("input_ids", 4096 + 128)
    assert ctx.addresses == {"input_ids": 4096}
    assert not ctx.set_optimization_profile_async(2, 0) and ctx.profile == 0
    assert ctx.set_optimization_profile_async(1, 0) and ctx.profile == 1 and ctx.shapes == {}
    assert not ctx.execute_async_v3(0)  # no shape set since the switch, and no output address
    runtime = FakeTensorRT(FakeCuda()).Runtime(None)  # a plan with host code needs engine_host_code_allowed
    assert runtime.deserialize_cuda_engine(plan_bytes("m.onnx", [], ["input_ids"], version_compatible=True)) is None


def test_an_emulated_t4_refuses_bf16_and_scores_fp16(compile_artifact, trt_artifact, monkeypatch, tmp_path):
    from engines.tensorrt import TensorRTEngine

    _emulate(monkeypatch, tmp_path, capability=(7, 5), name="Tesla T4")
    bf16 = compile_artifact("pair-classification", "tensorrt", precision="bf16")
    with pytest.raises(TargetMismatchError, match=r"compute capability 7\.5; the artifact's bf16 build needs >= 8\.0"):
        TensorRTEngine(bf16, open_artifact(bf16), Device("cuda", "0")).load()
    engine = TensorRTEngine(trt_artifact, open_artifact(trt_artifact), Device("cuda", "0")).load()
    assert engine.parity_record["passed"] is True
    engine.close()


@pytest.mark.parametrize("call, refused", [
    ("set_optimization_profile_async", r"optimisation profile \d+ of \d+"),
    ("set_input_shape", r"input shape input_ids \(\d+, \d+\)"),
    ("set_tensor_address", r"the address 0x[0-9a-f]+ of input_ids"),
])
def test_the_engine_raises_when_tensorrt_refuses_a_call(trt_artifact, emulated_gpu, monkeypatch, call, refused):
    """TensorRT answers False and keeps its previous state; going on would score with stale shapes or
    buffers. The first batch through the engine (the parity probes, at load) must fail the task."""
    from engines.errors import EngineCallError
    from engines.tensorrt import TensorRTEngine

    monkeypatch.setattr(IExecutionContext, call, lambda self, *args: False)
    with pytest.raises(EngineCallError, match=f"TensorRT refused {refused}"):
        TensorRTEngine(trt_artifact, open_artifact(trt_artifact), Device("cuda", "0")).load()


@pytest.fixture(scope="module")
def three_label_artifact(tmp_path_factory, minilm_dir):
    """A 3-label head: 12-byte output rows, so a 48-row chunk ends off a 256-byte boundary."""
    from compiler import compile as compile_cli
    from tests.conftest import build_tiny_bert

    root = tmp_path_factory.mktemp("three-labels")
    model = build_tiny_bert(root / "hf", minilm_dir, "text-classification", ["a", "b", "c"])
    out = root / "artifact"
    assert compile_cli.main(["--model", str(model), "--task", "text-classification", "--backend", "tensorrt",
                             "--out", str(out), "--max-seq-len", "128"]) == 0
    return out


def test_custom_buckets_with_a_48_row_profile_score_like_the_default_buckets(three_label_artifact, artifact_copy,
                                                                          emulated_gpu):
    """48 rows of 3 fp32 logits are 576 bytes, and 48 rows of 37 int32 tokens 7104: unpadded, the
    second chunk's addresses are not 256-byte aligned, and TensorRT refuses them and keeps the
    previous address, overwriting rows. The parity probes fit one chunk, so the gate cannot see it."""
    from engines.tensorrt import TensorRTEngine

    custom = artifact_copy(three_label_artifact)
    spec = trt_build.BuildSpec.read(custom)
    profiles = trt_build.profiles_for([(48, 32), (48, 64), (48, 128)], 128, max_tokens=48 * 32)
    assert {p.max_batch for p in profiles} == {48}
    spec = dataclasses.replace(spec, profiles=tuple(profiles))
    (custom / trt_build.BUILD_SPEC).write_text(json.dumps(spec.to_dict()))
    engines = [TensorRTEngine(folder, open_artifact(folder, verify=False), Device("cuda", "0")).load()
               for folder in (three_label_artifact, custom)]
    rng = np.random.default_rng(3)
    for rows, seq in ((130, 32), (100, 37), (97, 64), (49, 128)):  # 3, 3, 3 and 2 chunks of at most 48 rows
        feed = _random_feed(rng, rows, seq)
        default, chunked = (engine.infer(feed) for engine in engines)
        assert default.shape == (rows, 3)
        np.testing.assert_array_equal(chunked, default)
    for engine in engines:
        engine.close()


def test_chunk_strides_are_whole_multiples_of_256_bytes():
    from engines.tensorrt import ALIGN, aligned, chunks

    assert chunks(130, 48) == [(0, 48), (48, 48), (96, 34)]
    for elements, itemsize in ((48 * 3, 4), (48 * 33, 8), (48 * 7, 4), (64, 4), (1, 2)):
        stride = aligned(elements, itemsize)
        assert stride >= elements and stride * itemsize % ALIGN == 0 and (stride - elements) * itemsize < ALIGN


def test_version_compatible_plans_are_allowed_their_host_code(trt_artifact, artifact_copy, emulated_gpu):
    """A VERSION_COMPATIBLE plan embeds its lean runtime; the emulated Runtime, like TensorRT's,
    refuses to deserialize it unless engine_host_code_allowed is set."""
    from engines.tensorrt import TensorRTEngine

    compatible = artifact_copy(trt_artifact)
    spec = dataclasses.replace(trt_build.BuildSpec.read(compatible), version_compatible=True)
    (compatible / trt_build.BUILD_SPEC).write_text(json.dumps(spec.to_dict()))
    engine = TensorRTEngine(compatible, open_artifact(compatible, verify=False), Device("cuda", "0")).load()
    assert engine.parity_record["passed"] is True
    engine.close()


def test_two_batches_are_in_flight_on_the_engine_itself(trt_artifact, emulated_gpu, monkeypatch):
    """submit() queues the second batch without waiting for the first; only a third submit,
    which reuses the first batch's buffers, waits for it (and its result survives)."""
    from engines.registry import engine_class
    from engines.tensorrt import TensorRTEngine
    from tests.fake_tensorrt import FakeCuda, IExecutionContext

    log = []
    execute, sync = IExecutionContext.execute_async_v3, FakeCuda.Event.synchronize
    monkeypatch.setattr(IExecutionContext, "execute_async_v3",
                        lambda self, stream: log.append("execute") or execute(self, stream))
    monkeypatch.setattr(FakeCuda.Event, "synchronize", lambda self: log.append(("wait", id(self))) or sync(self))
    m = open_artifact(trt_artifact)
    engine = TensorRTEngine(trt_artifact, m, Device("cuda", "0")).load()
    cpu = engine_class("onnx")(trt_artifact, m).load()
    feeds = [_random_feed(np.random.default_rng(seed), 4, 16) for seed in range(3)]
    first = engine.submit(feeds[0])
    first_done = ("wait", id(first.slot.done))
    log.clear()
    second = engine.submit(feeds[1])
    assert "execute" in log and first_done not in log  # queued behind the first, not after it
    log.clear()
    third = engine.submit(feeds[2])
    assert log.index(first_done) < log.index("execute")  # the first batch's buffers are read before reuse
    for feed, handle in zip(feeds, (first, second, third)):
        np.testing.assert_allclose(handle.result(), cpu.infer(feed), atol=1e-3)
    engine.close()


def test_compile_build_keeps_its_plans_apart_without_touching_the_environment(trt_artifact, emulated_gpu, tmp_path):
    """`compile --build` hands the engine its own plan cache, so the shipped plans are exactly
    this build's, and it leaves ACCEL_SCORING_CACHE as it found it (the emulated GPU set it)."""
    import shutil

    from compiler import accel_compile

    work = tmp_path / "work"
    shutil.copytree(trt_artifact, work)
    before = dict(os.environ)
    record, added = accel_compile._build_here(work, open_artifact(work), {"onnx_fp32": {"passed": True}})
    assert dict(os.environ) == before
    assert added and all(rel.startswith(trt_build.PLANS_DIR + "/") and (work / rel).is_file() for rel in added)
    assert not list((tmp_path / "cache").rglob("*.plan"))  # the node's cache got nothing
    assert record["tensorrt_gpu"]["passed"] is True
