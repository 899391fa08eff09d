"""TEST DOUBLE of torch_neuronx (Inf2/Trn1) -- NOT the real package. See README.md here.

Signatures are the documented ones (tests/test_neuron_api.py compares them):
trace(func, example_inputs, *_, ..., cpu_backend=False) -> ScriptModule with fixed input shapes;
dynamic_batch(neuron_script) switches dynamic batching on in place and returns the same module.
Records NEURON_RT_VISIBLE_CORES at import.
"""
from __future__ import annotations

import torch

from _neuron_double_common import check_compiler_args, record_import, trace_static

__version__ = "2.9.0.2.15.32035"
IS_TEST_DOUBLE = True
IMPORT_RECORD = record_import("torch_neuronx")
TRACE_CALLS: list = []


def trace(func, example_inputs, *_, input_output_aliases={}, compiler_workdir=None, compiler_args=None,  # noqa: B006
          partitioner_config=None, inline_weights_to_neff=True, cpu_backend=False):
    if _:
        raise TypeError("torch_neuronx.trace takes its options as keywords only")
    args = check_compiler_args(compiler_args)
    TRACE_CALLS.append({"shape": tuple(example_inputs[0].shape), "compiler_args": args,
                        "compiler_workdir": compiler_workdir, "cpu_backend": cpu_backend})
    return trace_static(func, example_inputs, dynamic_batch=False)


def dynamic_batch(neuron_script):
    if not isinstance(neuron_script, torch.jit.ScriptModule) or not hasattr(neuron_script, "dynamic_batch"):
        raise TypeError("dynamic_batch takes the ScriptModule torch_neuronx.trace returned")
    neuron_script.dynamic_batch = True
    return neuron_script
