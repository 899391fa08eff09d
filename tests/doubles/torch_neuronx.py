"""TEST DOUBLE of torch_neuronx (Inf2/Trn1) -- NOT the real package. See README.md here.

Follows the documented surface we use: trace(func, example_inputs, *, compiler_workdir=None,
compiler_args=None, ..., cpu_backend=False) -> ScriptModule with fixed input shapes, and
dynamic_batch(model). Records NEURON_RT_VISIBLE_CORES at import.
"""
from __future__ import annotations

import torch

from _neuron_double_common import check_compiler_args, record_import, trace_static

__version__ = "2.9.0.2.15.32035"
IS_TEST_DOUBLE = True
IMPORT_RECORD = record_import("torch_neuronx")
TRACE_CALLS: list = []


def trace(func, example_inputs, *_, input_output_aliases=None, compiler_workdir=None, compiler_args=None,
          partitioner_config=None, inline_weights_to_neff=True, cpu_backend=False):
    if _:
        raise TypeError("torch_neuronx.trace takes its options as keywords only")
    args = check_compiler_args(compiler_args)
    TRACE_CALLS.append({"shape": tuple(example_inputs[0].shape), "compiler_args": args,
                        "compiler_workdir": compiler_workdir, "cpu_backend": cpu_backend})
    return trace_static(func, example_inputs, dynamic_batch=False)


class _DynamicBatch(torch.nn.Module):
    """Splits and pads dim 0 to the compiled batch size; other dims must match (ValueError)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *inputs):
        batch, seq = int(self.model.batch), int(self.model.seq)
        for x in inputs:
            if tuple(x.shape[1:]) != (seq,):
                raise ValueError(f"dynamic_batch: non-batch dims {tuple(x.shape[1:])} != compiled ({seq},)")
        n = inputs[0].shape[0]
        outs = []
        for start in range(0, n, batch):
            chunk = [x[start:start + batch] for x in inputs]
            rows = chunk[0].shape[0]
            if rows < batch:
                chunk = [torch.cat([c, c[-1:].expand(batch - rows, *c.shape[1:])]) for c in chunk]
            outs.append(self.model(*chunk)[:rows])
        return torch.cat(outs)


def dynamic_batch(model):
    return _DynamicBatch(model)
