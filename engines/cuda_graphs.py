"""One CUDA graph per padded batch shape: a small model's forward pass is hundreds of kernel
launches, and replaying a captured graph launches them all at once.

A graph replays fixed addresses, so each shape gets static input buffers that every batch of
that shape is copied into. Shapes are (rows rounded up to ROW_MULTIPLE, seq, padded): the
scorer's token-budget batches already share a few row counts per sequence length, and the
rounding keeps the odd last batch of each Arrow batch from making a new graph each time.
Padding rows hold stale ids and are never read back (rows do not interact in BERT).

Graphs share one memory pool and are replayed one at a time on the engine's compute stream.
At most `limit` shapes are captured; later shapes run eagerly (counted), so memory stays
bounded. If a capture fails (an operation that syncs with the host, an old driver), the reason
is logged once and every batch runs eagerly from then on.
"""
from __future__ import annotations

import sys

ROW_MULTIPLE = 8


class CudaGraphs:
    def __init__(self, torch, forward, device, stream, limit: int = 64, row_multiple: int = ROW_MULTIPLE):
        """`forward(ids, mask, types, padded)` is what gets captured; `stream` is where replays run."""
        self.torch, self.forward, self.device, self.stream = torch, forward, device, stream
        self.limit, self.row_multiple = limit, row_multiple
        self.entries: dict[tuple, tuple] = {}
        self.failed: str | None = None
        self.eager_batches = 0  # batches of a new shape after `limit` graphs, run without one
        self._pool = torch.cuda.graph_pool_handle()

    def rows_for(self, rows: int) -> int:
        return -(-rows // self.row_multiple) * self.row_multiple

    def run(self, inputs: list, padded: bool):
        """The forward pass's output for `inputs` ([rows, seq] device tensors) by graph replay, on
        the current stream; None where it must run eagerly (the caller runs it then)."""
        if self.failed is not None:
            return None
        rows, seq = inputs[0].shape
        key = (self.rows_for(rows), seq, padded)
        entry = self.entries.get(key)
        if entry is None:
            if len(self.entries) >= self.limit:
                self.eager_batches += 1
                return None
            entry = self._capture(key)
            if entry is None:
                return None
        static, graph, out = entry
        for buffer, given in zip(static, inputs):
            buffer[:rows].copy_(given)
        graph.replay()
        return out[:rows]

    def _capture(self, key: tuple):
        torch = self.torch
        rows, seq, padded = key
        static = [torch.zeros((rows, seq), dtype=torch.int64, device=self.device) for _ in range(3)]
        static[1].fill_(1)  # attention mask: padding rows attend to every (stale) token, so they stay finite
        try:
            side = torch.cuda.Stream(device=self.device)
            side.wait_stream(self.stream)
            with torch.cuda.stream(side):  # warm-up outside the capture: cuBLAS workspaces, kernel choice
                for _ in range(2):
                    self.forward(*static, padded)
            self.stream.wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self._pool, stream=side):
                out = self.forward(*static, padded)
            self.stream.wait_stream(side)
        except Exception as e:  # noqa: BLE001 - any capture failure means: run eagerly
            self.failed = f"{type(e).__name__}: {e}"[:500]
            print(f"accel-scoring: CUDA graph capture of a [{rows}, {seq}] batch failed, every batch runs without "
                  f"graphs from now on: {self.failed}", file=sys.stderr, flush=True)
            return None
        self.entries[key] = (static, graph, out)
        return self.entries[key]

    def summary(self) -> dict:
        return {"graphs": len(self.entries), "eager_batches": self.eager_batches, "failed": self.failed}
