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
    token_type_ids) is supported. `dynamic_batch` is a scripted attribute, so switching it on
    after tracing (torch_neuronx.dynamic_batch) is saved by torch.jit.save, as the real flag
    in the Neuron graph is; with it on, dim 0 is split and padded to the compiled batch and
    any other dimension that differs raises, as the documented dynamic batching does.
    """

    def __init__(self, inner, batch: int, seq: int, dynamic_batch: bool):
        super().__init__()
        self.inner = inner
        self.batch = batch
        self.seq = seq
        self.dynamic_batch = dynamic_batch

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor) -> torch.Tensor:
        n, seq = input_ids.shape[0], input_ids.shape[1]
        if self.dynamic_batch and seq != self.seq:
            raise ValueError("dynamic_batch: non-batch dims (" + str(seq) + ",) != compiled (" + str(self.seq) + ",)")
        if seq != self.seq or (not self.dynamic_batch and n != self.batch):
            raise RuntimeError("neuron test double: input shape [" + str(n) + ", " + str(seq) + "] differs from "
                               "the compiled [" + str(self.batch) + ", " + str(self.seq) + "]")
        if not self.dynamic_batch:
            return self.inner(input_ids, attention_mask, token_type_ids)
        outs: List[torch.Tensor] = []
        for start in range(0, n, self.batch):
            ids = input_ids[start:start + self.batch]
            mask = attention_mask[start:start + self.batch]
            types = token_type_ids[start:start + self.batch]
            rows = ids.shape[0]
            if rows < self.batch:  # pad with copies of the last row, dropped again below
                ids, mask, types = (torch.cat([x, x[-1:].expand(self.batch - rows, self.seq)])
                                    for x in (ids, mask, types))
            outs.append(self.inner(ids, mask, types)[:rows])
        return torch.cat(outs)


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
