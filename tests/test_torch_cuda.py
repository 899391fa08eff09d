"""The torch-cuda backend (engines/torch_cuda.py, torch_bert.py, cuda_graphs.py; compiler/torch_cuda_compile.py):
compile, the artifact, the load-time gate, and the engine on the CPU for real and on an emulated
GPU (tests/fake_tensorrt.py's FakeCuda plus the graph calls), where streams and events are no-ops
and "device" tensors live in CPU memory. What the emulation proves: the pipelined slots, the graph
cache's shapes, static buffers and limits, and the fallbacks give the eager CPU numbers. What it
does not: CUDA kernels, fp16/bf16 numerics on a GPU, real overlap (bench/device_check.py measures those).
"""
from __future__ import annotations

import json
import types

import numpy as np
import pytest
import torch

from engines import registry
from engines.base import Device
from engines.errors import ArtifactError, ParityError, TargetMismatchError
from engines.store import open_artifact
from engines.torch_cuda import TorchCudaEngine
from tests.fake_tensorrt import FakeCuda

TASKS = ("pair-classification", "embedding", "text-classification")


def _feed(rng, batch, seq, padded=True):
    ids = rng.integers(1000, 2000, (batch, seq))
    mask = np.ones_like(ids)
    if padded:
        mask[-1, max(1, seq // 2):] = 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


@pytest.mark.parametrize("task", TASKS)
def test_compile_writes_weights_and_architecture_and_checks_the_conversion(compile_artifact, task):
    folder = compile_artifact(task, "torch-cuda")
    m = open_artifact(folder)
    assert (m.backend, m.precision) == ("torch-cuda", "fp16")  # the backend's default precision
    assert {"torch/model.json", "torch/weights.pt", "parity/probes.npz"} <= set(m.files)
    assert not any(f.endswith((".onnx", ".plan")) for f in m.files)
    assert m.target["device"] == "cuda" and m.target["min_compute_capability"] == [7, 5]
    # the conversion against transformers, in fp32; then the artifact in fp16 on this CPU
    assert m.parity["implementation_fp32"]["max_abs_diff"] <= 1e-4 and m.parity["implementation_fp32"]["passed"]
    assert m.parity["passed"] is True and m.parity["precision"] == "fp16" and m.parity["device"] == "cpu"
    state = torch.load(folder / "torch/weights.pt", weights_only=True)
    assert state["layers.0.qkv.weight"].dtype == torch.float16  # the encoder in the compile precision
    assert state["pooler.weight" if task != "embedding" else "word.weight"].dtype == \
        (torch.float32 if task != "embedding" else torch.float16)  # the head in fp32


@pytest.mark.parametrize("task", TASKS)
def test_fp32_on_the_cpu_equals_the_onnx_artifact(compile_artifact, task):
    cpu = open_artifact(compile_artifact(task, "onnx"))
    ours = open_artifact(compile_artifact(task, "torch-cuda", precision="fp32"))
    rng = np.random.default_rng(1)
    with registry.engine_class("onnx")(compile_artifact(task, "onnx"), cpu).load() as onnx, \
            TorchCudaEngine(compile_artifact(task, "torch-cuda", precision="fp32"), ours, Device("cpu")).load() as eng:
        for batch, seq, padded in ((1, 8, False), (5, 24, True), (3, 64, False)):
            feed = _feed(rng, batch, seq, padded)
            np.testing.assert_allclose(eng.infer(feed), onnx.infer(feed), atol=1e-4)
        assert eng.parity_record["passed"] and eng.parity_record["max_abs_diff"] <= 1e-4


def test_bf16_compiles_and_passes_its_gate(compile_artifact):
    m = open_artifact(compile_artifact("pair-classification", "torch-cuda", precision="bf16"))
    assert m.target["min_compute_capability"] == [8, 0]
    assert m.parity["passed"] and m.parity["tolerance"] == {"label_agreement": 0.995, "p99_score_diff": 0.02}


def test_the_real_minilm_converts_exactly(minilm_dir, tmp_path):
    from compiler import compile as compile_cli

    out = tmp_path / "minilm"
    assert compile_cli.main(["--model", str(minilm_dir), "--task", "embedding", "--backend", "torch-cuda",
                             "--precision", "bf16", "--max-seq-len", "128", "--out", str(out)]) == 0
    parity = open_artifact(out).parity
    assert parity["implementation_fp32"]["min_cosine"] >= 0.99999 and parity["min_cosine"] >= 0.999


def test_a_model_it_does_not_implement_is_refused_naming_what_and_the_alternative(tiny_models, tmp_path, capsys):
    from transformers import BertConfig

    from compiler import compile as compile_cli

    folder = tmp_path / "relative"
    import shutil

    shutil.copytree(tiny_models["pair-classification"], folder)
    config = BertConfig.from_pretrained(folder)
    config.position_embedding_type = "relative_key"
    config.save_pretrained(folder)
    rc = compile_cli.main(["--model", str(folder), "--task", "pair-classification", "--backend", "torch-cuda",
                           "--out", str(tmp_path / "out"), "--allow-untrained-head"])
    err = capsys.readouterr().err
    assert rc == 1 and not (tmp_path / "out").exists()
    assert "position_embedding_type 'relative_key'" in err and "--backend onnx or tensorrt" in err


def test_an_artifact_failing_its_gate_on_load_is_refused(compile_artifact, artifact_copy):
    from engines import parity

    folder = artifact_copy(compile_artifact("pair-classification", "torch-cuda"))
    batches, refs = parity.load_probes(folder / parity.PROBES_FILE)
    parity.save_probes(folder / parity.PROBES_FILE, batches, [-r for r in refs])  # every label flipped
    with pytest.raises(ParityError, match="failed parity on cpu"):
        TorchCudaEngine(folder, open_artifact(folder, verify=False), Device("cpu")).load()


def test_what_it_needs_is_known_before_loading(monkeypatch):
    """A local-mode driver asks this before any task (jobs/runner.py check_engine_here)."""
    monkeypatch.setattr("engines.torch_cuda.local_gpus", lambda: 0)
    assert TorchCudaEngine.unavailable(Device()) is None
    assert "needs an NVIDIA GPU" in TorchCudaEngine.unavailable(Device("cuda", "0")) and \
        "--device cpu" in TorchCudaEngine.unavailable(Device("cuda", "0"))
    monkeypatch.setattr("engines.torch_cuda.local_gpus", lambda: 1)
    assert TorchCudaEngine.unavailable(Device("cuda", "0")) is None
    monkeypatch.setitem(__import__("sys").modules, "torch", None)
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name == "torch" else object())
    assert TorchCudaEngine.unavailable(Device()).startswith("backend torch-cuda needs torch, not importable")


def test_devices_and_auto_on_a_machine_without_a_gpu():
    from udfs.device import bind_device

    assert bind_device("torch-cuda", "cpu", {}) == Device()
    assert bind_device("torch-cuda", None, {"gpu": ["3"]}) == Device("cuda", "3")
    with pytest.raises(ValueError, match="runs on cuda:N or cpu"):
        bind_device("torch-cuda", "neuron:0", {})
    assert registry.spark_resources()["cuda"] == "gpu"
    manifest = types.SimpleNamespace(backend="torch-cuda", model_id="m@1", files={})
    from engines.hardware import Hardware

    with pytest.raises(ArtifactError, match="pass --backend torch-cuda --device cpu"):
        registry.resolve_backend("auto", manifest, Hardware())
    assert registry.resolve_backend("auto", manifest, Hardware({"cuda": 1})) == "torch-cuda"


# ------------------------------------------------------------------ the GPU path, emulated


class FakeTorchCuda(FakeCuda):
    """FakeCuda plus what TorchCudaEngine and CudaGraphs call; a CUDAGraph re-runs what it captured,
    reading its static inputs, so a batch not copied into them gives wrong numbers."""

    def __init__(self, capability=(9, 0), name="NVIDIA H200", capture_fails=False):
        super().__init__(capability, name)
        self.capture_fails = capture_fails
        self.captured: list = []
        self.replays = 0
        outer = self

        class CUDAGraph:
            def replay(self):
                outer.replays += 1
                with torch.inference_mode():  # the captured output is an inference tensor
                    self.out.copy_(self.fn())

        class graph:
            def __init__(self, g, pool=None, stream=None):
                self.g = g

            def __enter__(self):
                if outer.capture_fails:
                    raise RuntimeError("operation not permitted when stream is capturing")
                outer.capturing = self.g

            def __exit__(self, *exc):
                outer.capturing = None

        self.CUDAGraph, self.graph = CUDAGraph, graph
        self.capturing = None
        Stream = self.Stream
        Stream.wait_stream = lambda s, other: None

    def graph_pool_handle(self):
        return object()


def _emulated_torch(cuda: FakeTorchCuda):
    """torch, except torch.cuda and torch.empty (the fakes) and torch.device, which puts every "GPU" tensor in
    CPU memory."""
    module = types.ModuleType("torch")
    module.__dict__.update({k: getattr(torch, k) for k in dir(torch) if not k.startswith("__")})
    module.__version__ = torch.__version__
    module.cuda, module.empty = cuda, cuda.empty
    module.device = lambda kind, index=None: torch.device("cpu")
    module.version = types.SimpleNamespace(cuda="13.fake")
    module.backends = types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=True)),
                                            cudnn=types.SimpleNamespace(allow_tf32=True))
    return module


@pytest.fixture
def emulated(monkeypatch):
    def make(**gpu):
        cuda = FakeTorchCuda(**gpu)
        fake = _emulated_torch(cuda)
        monkeypatch.setattr("engines.torch_cuda._import_torch", lambda: fake)
        original = TorchCudaEngine._forward

        def forward(self, ids, mask, types_, padded):  # a capture records the call it would replay
            out = original(self, ids, mask, types_, padded)
            if cuda.capturing is not None:
                cuda.capturing.fn, cuda.capturing.out = (lambda: original(self, ids, mask, types_, padded)), out
                cuda.captured.append((tuple(ids.shape), padded))
            return out

        monkeypatch.setattr(TorchCudaEngine, "_forward", forward)
        return cuda, fake

    return make


def test_emulated_gpu_pipelines_and_replays_graphs_with_the_cpu_numbers(compile_artifact, emulated):
    cuda, _ = emulated()
    folder = compile_artifact("pair-classification", "torch-cuda", precision="fp32")
    m = open_artifact(folder)
    cpu = TorchCudaEngine(folder, m, Device("cpu")).load()
    gpu = TorchCudaEngine(folder, m, Device("cuda", "0"), max_graphs=3).load()
    assert gpu.parity_record["passed"] and gpu.parity_record["device"] == "cuda:0"
    rng = np.random.default_rng(2)
    feeds = [_feed(rng, b, s, p) for b, s, p in
             ((5, 16, True), (7, 16, True), (5, 16, False), (12, 32, True), (3, 40, True), (6, 16, True))]
    handles = []
    for feed in feeds:  # two batches in flight at a time, as udfs/execute.py submits them
        handles.append(gpu.submit(feed))
    for feed, handle in zip(feeds, handles):
        np.testing.assert_allclose(handle.result(), cpu.infer(feed), atol=1e-5)
    # rows rounded up to 8; the unpadded batch gets its own graph; the warm-up (1, 8) took the first
    assert cuda.captured == [((8, 8), False), ((8, 16), True), ((8, 16), False)]
    assert gpu.graphs.summary() == {"graphs": 3, "eager_batches": 2, "failed": None}  # (16, 32), (8, 40): over the limit
    assert cuda.replays == 4 + 1  # warm-up, then 5, 7, 5 unpadded and 6 rows of 16 tokens


def test_a_failed_capture_is_logged_once_and_every_batch_runs_eagerly(compile_artifact, emulated, capfd):
    emulated(capture_fails=True)
    folder = compile_artifact("embedding", "torch-cuda", precision="fp32")
    m = open_artifact(folder)
    gpu = TorchCudaEngine(folder, m, Device("cuda", "0")).load()
    cpu = TorchCudaEngine(folder, m, Device("cpu")).load()
    rng = np.random.default_rng(3)
    for shape in ((4, 16), (9, 24)):
        feed = _feed(rng, *shape)
        np.testing.assert_allclose(gpu.infer(feed), cpu.infer(feed), atol=1e-5)
    assert capfd.readouterr().err.count("CUDA graph capture") == 1
    assert gpu.graphs.failed.startswith("RuntimeError: operation not permitted")


def test_graphs_off_runs_eagerly_and_fp32_turns_tf32_off(compile_artifact, emulated):
    cuda, fake = emulated()
    folder = compile_artifact("text-classification", "torch-cuda", precision="fp32")
    gpu = TorchCudaEngine(folder, open_artifact(folder), Device("cuda", "0"), cuda_graphs=False).load()
    gpu.infer(_feed(np.random.default_rng(4), 3, 16))
    assert gpu.graphs is None and cuda.captured == []
    assert fake.backends.cuda.matmul.allow_tf32 is False and fake.backends.cudnn.allow_tf32 is False


def test_bf16_is_refused_below_ampere_with_the_fix(compile_artifact, emulated):
    emulated(capability=(7, 5), name="Tesla T4")
    folder = compile_artifact("pair-classification", "torch-cuda", precision="bf16")
    with pytest.raises(TargetMismatchError, match="Tesla T4 has compute capability 7.5.*--precision fp16"):
        TorchCudaEngine(folder, open_artifact(folder), Device("cuda", "0")).load()


def test_without_a_gpu_the_error_says_so_and_how_to_score_on_the_cpu(compile_artifact):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    folder = compile_artifact("pair-classification", "torch-cuda")
    from engines.errors import EngineUnavailableError

    with pytest.raises(EngineUnavailableError, match="torch.cuda.is_available\\(\\) is False.*--device cpu"):
        TorchCudaEngine(folder, open_artifact(folder), Device("cuda", "0")).load()


def test_the_manifest_records_what_the_worker_needs(compile_artifact):
    m = json.loads((compile_artifact("embedding", "torch-cuda") / "manifest.json").read_text())
    assert m["target"]["runtime"] == "torch" and m["target"]["torch_min"] == "2.1"
    assert m["target"]["compiled_with_torch"] == torch.__version__.split("+")[0] or \
        m["target"]["compiled_with_torch"] == torch.__version__


# ------------------------------------------------------------------ on a real GPU (bench/device_check.sh runs these)


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_on_a_gpu_graphs_and_pipelining_give_the_eager_numbers(compile_artifact, precision):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    folder = compile_artifact("pair-classification", "torch-cuda", precision=precision)
    m = open_artifact(folder)
    graphs = TorchCudaEngine(folder, m, Device("cuda", "0")).load()
    eager = TorchCudaEngine(folder, m, Device("cuda", "0"), cuda_graphs=False).load()
    assert graphs.parity_record["passed"] and graphs.parity_record["device"] == "cuda:0"
    rng = np.random.default_rng(5)
    feeds = [_feed(rng, b, s, p) for b, s, p in ((5, 16, True), (64, 128, False), (7, 16, True), (33, 72, True))]
    handles = [graphs.submit(f) for f in feeds]
    for feed, handle in zip(feeds, handles):
        np.testing.assert_allclose(handle.result(), eager.infer(feed), atol=1e-3)
    assert graphs.graphs.failed is None and graphs.graphs.summary()["graphs"] >= 4
    assert torch.cuda.memory_allocated() > 0
