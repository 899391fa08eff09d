"""Each backend's facts live on its Engine subclass (engines/base.py); everything else reads them
through engines/registry.py. These tests hold that: a new subclass is enough for a new backend."""
from __future__ import annotations

import subprocess
import sys

import pytest

from compiler.stage import Stage, stage_for
from engines import registry
from engines.artifact import Manifest
from engines.base import Device, Engine
from engines.errors import ArtifactError

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
HEAVY = ("torch", "tensorrt", "torch_neuronx", "torch_neuron")


def test_the_registry_and_its_readers_import_no_framework():
    code = ("import sys, engines.registry, jobs.cli, udfs.device; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_shipped_backends_declare_their_facts():
    # Test doubles that declare a backend (tests/fakes.py) register too, after the shipped ones.
    shipped = [b for b in registry.backends() if registry.engine_class(b).__module__ in registry.ENGINE_MODULES]
    assert shipped == ["onnx", "torch", "tensorrt", "torch-cuda", "neuronx", "neuron"]
    assert registry.backends()[:6] == tuple(shipped)
    assert registry.spark_resources() == {"cuda": "gpu", "neuron": "neuroncore"}
    assert registry.canonical_backend("torchscript") == "torch"
    assert [registry.engine_class(b).precisions[0] for b in shipped] == \
        ["fp32", "fp32", "fp16", "fp16", "bf16", "bf16"]


class FakeStage(Stage):
    """The fake backend's compile stage: compiler/compile.py finds it through the engine class."""


@pytest.fixture
def fake_backend(monkeypatch):
    """A throwaway CPU backend, registered only for this test (the registry is restored after)."""
    monkeypatch.setattr(registry, "_ENGINES", dict(registry._ENGINES))

    class FakeEngine(Engine):
        backend = "fake"
        precisions = ("fp32", "int4")
        default_batch_tokens = 1234
        pad_multiple = 4
        compile_stage = f"{__name__}:FakeStage"

        def _load(self):
            pass

        def _infer(self, feed):
            return feed["input_ids"][:, :1].astype("float32")

    return FakeEngine


def _manifest(backend: str) -> Manifest:
    return Manifest(name="m", version="1", task="embedding", backend=backend, max_seq_len=64,
                    buckets=((8, 64),), files={})


def test_a_new_engine_subclass_is_a_backend_everywhere(fake_backend, tmp_path):
    from compiler import compile as compile_cli
    from jobs import cli, runner
    from udfs.device import bind_device

    assert "fake" in cli.backend_choices()
    args = cli.common_parser("job", "test").parse_args(
        ["--input", "in", "--output", "out", "--model", "m", "--backend", "fake"])
    assert args.backend == "fake"
    assert "1234 for fake" in cli.batch_tokens_defaults()

    parsed = compile_cli.build_parser().parse_args(
        ["--model", "m", "--task", "embedding", "--out", "o", "--backend", "fake", "--precision", "int4"])
    assert (parsed.backend, parsed.precision) == ("fake", "int4")
    registry.check_precision("fake", "int4")
    assert isinstance(stage_for("fake"), FakeStage)
    with pytest.raises(ArtifactError, match="choose one of \\['fp32', 'int4'\\]"):
        registry.check_precision("fake", "fp16")

    assert bind_device("fake", None, {"gpu": ["0"]}) == Device()
    assert bind_device("fake", "cpu", {}) == Device()

    manifest = _manifest("fake")
    assert registry.resolve_backend("auto", manifest) == "fake"
    cfg = cli.config_from(args, {})
    spec = runner.plan(cfg, manifest, {"spark.master": "yarn"})
    assert (spec.backend, spec.batch_tokens) == ("fake", 1234)

    engine = fake_backend(tmp_path, manifest)
    assert (engine.spec.pad_multiple, engine.spec.static_shapes) == (4, False)


def test_every_shipped_backend_has_a_compile_stage():
    for backend in ("onnx", "torch", "tensorrt", "torch-cuda", "neuronx", "neuron"):
        assert isinstance(stage_for(backend), Stage)


def test_the_fake_backend_is_gone_after_its_test():
    assert "fake" not in registry.backends()
    with pytest.raises(ArtifactError, match="manifest backend 'fake'"):
        registry.checked(_manifest("fake"))


def test_two_classes_cannot_claim_one_backend(monkeypatch):
    monkeypatch.setattr(registry, "_ENGINES", dict(registry._ENGINES))
    with pytest.raises(ValueError, match="declared by both"):
        class Another(Engine):
            backend = "onnx"
