"""Pinned host and device buffers for engines that overlap a batch's copies with the previous
batch's compute on an NVIDIA GPU (TensorRT, torch-cuda: `pipeline_depth = 2`).

Each engine keeps two slots and alternates between them: while the GPU computes the batch in
one, the host fills the other and its copy to the device runs on a copy stream. A slot is only
reused once the batch it last held is finished and its output has been read.
"""
from __future__ import annotations

from typing import Mapping


class Slot:
    """One set of flat staging and device buffers; two slots let one batch copy while another computes."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device
        self.host: dict = {}
        self.dev: dict = {}
        self.copied = torch.cuda.Event()
        self.done = torch.cuda.Event()
        self.used = False
        self.pending = None

    def claim(self) -> "Slot":
        """Wait until the slot's last batch is read and finished, so its buffers may be rewritten."""
        if self.pending is not None:
            self.pending.result()  # its outputs are read before the buffers are reused
        if self.used:
            self.done.synchronize()
        return self

    def ensure(self, sizes: Mapping[str, int], dtypes: Mapping[str, object]) -> None:
        """At least sizes[name] elements of dtypes[name] for every tensor, on the host and the device."""
        torch = self.torch
        for name, size in sizes.items():
            if name not in self.dev or self.dev[name].numel() < size:
                self.host[name] = torch.empty(size, dtype=dtypes[name], pin_memory=True)
                self.dev[name] = torch.empty(size, dtype=dtypes[name], device=self.device)


class Pending:
    """A batch in flight in a slot: `result()` waits for it once and reads its output (`read`)."""

    def __init__(self, slot: Slot):
        self.slot = slot
        self._value = None

    def result(self):
        if self._value is None:
            self.slot.done.synchronize()
            self._value = self.read()
            self.slot.pending = None
        return self._value

    def read(self):
        """The batch's output from the slot's host buffers, as a numpy array of its own."""
        raise NotImplementedError
