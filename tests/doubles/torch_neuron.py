"""TEST DOUBLE of torch_neuron (Inf1, legacy) -- NOT the real package. See README.md here.

Follows the documented surface we use: trace(model, example_inputs, compiler_args=...,
compiler_workdir=..., dynamic_batch_size=False, **jit_kwargs) -> ScriptModule with a fixed
sequence length (and batch, unless dynamic_batch_size), also reachable as torch.neuron.trace.
Records NEURON_RT_VISIBLE_CORES at import.
"""
from __future__ import annotations

import sys

import torch

from _neuron_double_common import check_compiler_args, record_import, trace_static

__version__ = "1.13.1.2.11.13.0"
IS_TEST_DOUBLE = True
IMPORT_RECORD = record_import("torch_neuron")
TRACE_CALLS: list = []
_TRACE_KEYWORDS = {"compiler_workdir", "compiler_timeout", "subgraph_builder_function", "minimum_segment_size",
                   "fallback", "optimizations", "separate_weights"}


def trace(func, example_inputs, compiler_args=None, dynamic_batch_size=False, **kwargs):
    args = check_compiler_args(compiler_args)
    jit_kwargs = {k: v for k, v in kwargs.items() if k not in _TRACE_KEYWORDS}  # passed to torch.jit.trace
    TRACE_CALLS.append({"shape": tuple(example_inputs[0].shape), "compiler_args": args,
                        "dynamic_batch_size": dynamic_batch_size})
    return trace_static(func, example_inputs, dynamic_batch=dynamic_batch_size, **jit_kwargs)


torch.neuron = sys.modules[__name__]  # the real package registers the torch.neuron namespace
