"""TEST DOUBLE of torch_neuron (Inf1, legacy) -- NOT the real package. See README.md here.

Signature is the documented one (tests/test_neuron_api.py compares it):
trace(model, example_inputs, **kwargs), where the documented Neuron keywords (NEURON_KEYWORDS) are
taken and every other keyword goes to torch.jit.trace; returns a ScriptModule with a fixed
sequence length (and batch, unless dynamic_batch_size=True), also reachable as torch.neuron.trace.
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
NEURON_KEYWORDS = frozenset({"compiler_args", "compiler_timeout", "compiler_workdir", "subgraph_builder_function",
                             "minimum_segment_size", "single_fusion_ratio_threshold", "fallback",
                             "dynamic_batch_size", "optimizations", "separate_weights"})


def trace(model, example_inputs, **kwargs):
    args = check_compiler_args(kwargs.get("compiler_args"))
    dynamic = bool(kwargs.get("dynamic_batch_size", False))
    jit_kwargs = {k: v for k, v in kwargs.items() if k not in NEURON_KEYWORDS}
    TRACE_CALLS.append({"shape": tuple(example_inputs[0].shape), "compiler_args": args, "dynamic_batch_size": dynamic})
    return trace_static(model, example_inputs, dynamic_batch=dynamic, **jit_kwargs)


torch.neuron = sys.modules[__name__]  # the real package registers the torch.neuron namespace
