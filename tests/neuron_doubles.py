"""Put the torch_neuronx / torch_neuron TEST DOUBLES (tests/doubles/) on the import path, and
take them off again with the Neuron variables they and our engines set. Shared by the Neuron
engine tests and the Spark job test."""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import pytest

DOUBLES = Path(__file__).resolve().parent / "doubles"
MODULES = ("torch_neuronx", "torch_neuron", "_neuron_double_common")
VARIABLES = ("NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES", "NEURON_DOUBLE_LOG")


def forget_runtime() -> None:
    """As if this process had never imported a Neuron runtime."""
    for name in MODULES:
        sys.modules.pop(name, None)
    import torch

    if getattr(torch, "neuron", None) is not None and getattr(torch.neuron, "IS_TEST_DOUBLE", False):
        del torch.neuron


@contextlib.contextmanager
def neuron_doubles(log: Path | None = None):
    """Within: `import torch_neuronx` finds the double; Neuron variables start unset."""
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(DOUBLES))
        for var in VARIABLES:
            mp.setenv(var, "")  # registers the original value, restored on exit
            mp.delenv(var)
        if log is not None:
            mp.setenv("NEURON_DOUBLE_LOG", str(log))
        forget_runtime()
        try:
            yield
        finally:
            forget_runtime()


def without_neuron_sdk():
    """Within: no Neuron runtime is importable (whatever this machine has installed)."""
    mp = pytest.MonkeyPatch()
    for name in ("torch_neuronx", "torch_neuron"):
        mp.setitem(sys.modules, name, None)
    return mp


def compile_neuron(tiny_models, out: Path, backend: str = "neuronx", task: str = "pair-classification",
                   extra: tuple = ()) -> dict:
    """Compile a tiny model for `backend` with the doubles; return what the double's trace saw."""
    from compiler import compile as compile_cli

    with neuron_doubles():
        argv = ["--model", str(tiny_models[task]), "--task", task, "--backend", backend, "--out", str(out),
                "--name", f"tiny-{task}", "--version", "7", "--max-seq-len", "64", "--buckets", "4x16,2x64", *extra]
        assert compile_cli.main(argv) == 0
        module = sys.modules["torch_neuronx" if backend == "neuronx" else "torch_neuron"]
        return {"trace_calls": list(module.TRACE_CALLS), "env_after": {v: os.environ.get(v) for v in VARIABLES}}
