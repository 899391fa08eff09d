"""Test doubles, each saying what it proves and what it does not."""
from __future__ import annotations

import numpy as np

from engines.base import Engine, EngineSpec
from udfs.tokenize import Encoded


def random_encoded(lengths, seed=0) -> Encoded:
    """Unpadded token ids of the given lengths, none truncated."""
    rng = np.random.default_rng(seed)
    ids = [rng.integers(1000, 2000, n) for n in lengths]
    return Encoded(ids, [np.zeros(n, dtype=np.int64) for n in lengths], np.zeros(len(lengths), bool))


class RowEchoEngine(Engine):
    """Returns, per row, [sum of real token ids, real length, padded length].

    Proves plumbing: batching, padding and order restoration (a row's output depends on its own
    tokens only). Says nothing about numerics or speed.
    """

    backend = "echo"

    def __init__(self, max_seq_len: int = 64, static: bool = False, buckets=(), fail_if=None):
        self._spec = EngineSpec(input_names=("input_ids", "attention_mask", "token_type_ids"),
                                max_seq_len=max_seq_len, buckets=tuple(buckets), static_shapes=static)
        self.fail_if = fail_if
        self.calls: list[tuple[int, int]] = []
        self._loaded = True

    @property
    def spec(self) -> EngineSpec:
        return self._spec

    def _load(self) -> None:
        pass

    def _infer(self, feed):
        ids, mask = feed["input_ids"], feed["attention_mask"]
        self.calls.append(ids.shape)
        if self.fail_if is not None and self.fail_if(ids, mask):
            raise MemoryError(f"fake out-of-memory on a {ids.shape} batch")
        return np.stack([(ids * mask).sum(1), mask.sum(1), np.full(len(ids), ids.shape[1])], axis=1).astype(np.float64)
