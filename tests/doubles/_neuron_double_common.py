"""Shared pieces of the torch_neuronx / torch_neuron TEST DOUBLES (see README.md here)."""
from __future__ import annotations

import json
import os
from typing import List

import torch


def record_import(module: str) -> dict:
    """What the Neuron runtime would read once per process: the core variables at import."""
    seen = {"module": module, "pid": os.getpid(),
            "NEURON_RT_VISIBLE_CORES": os.environ.get("NEURON_RT_VISIBLE_CORES"),
            "NEURON_RT_NUM_CORES": os.environ.get("NEURON_RT_NUM_CORES")}
    log = os.environ.get("NEURON_DOUBLE_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps(seen) + "\n")
    return seen


class StaticShape(torch.nn.Module):
    """A traced model whose input shape is fixed, as a compiled NEFF's is.

    Only the three-input signature our artifacts trace (input_ids, attention_mask,
    token_type_ids) is supported. With dynamic_batch, dim 0 may differ (torch-neuron's
    dynamic_batch_size=True); the sequence axis never may.
    """

    def __init__(self, inner, batch: int, seq: int, dynamic_batch: bool):
        super().__init__()
        self.inner = inner
        self.batch = batch
        self.seq = seq
        self.dynamic_batch = dynamic_batch

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor) -> torch.Tensor:
        shape: List[int] = input_ids.shape
        if shape[1] != self.seq or (not self.dynamic_batch and shape[0] != self.batch):
            raise RuntimeError("neuron test double: input shape " + str(shape) + " differs from the compiled ["
                               + str(self.batch) + ", " + str(self.seq) + "]")
        return self.inner(input_ids, attention_mask, token_type_ids)


def trace_static(func, example_inputs, dynamic_batch: bool, **jit_kwargs):
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if len(example_inputs) != 3:
        raise TypeError("the neuron test double only traces (input_ids, attention_mask, token_type_ids)")
    batch, seq = (int(d) for d in example_inputs[0].shape)
    inner = torch.jit.trace(func, tuple(example_inputs), check_trace=False, **jit_kwargs)
    return torch.jit.script(StaticShape(inner, batch, seq, dynamic_batch))


def check_compiler_args(compiler_args) -> List[str]:
    if compiler_args is None:
        return []
    if isinstance(compiler_args, str):
        return compiler_args.split()
    if not all(isinstance(a, str) for a in compiler_args):
        raise TypeError(f"compiler_args must be strings, got {compiler_args!r}")
    return list(compiler_args)
