"""Length-sorted, token-budget device batches and their padding.

Rows are sorted by length (ties by position, so the plan is deterministic), cut into batches
whose padded size fits the token budget, and padded either to the batch's longest row rounded
up to a multiple of 8 (dynamic engines) or to the smallest compiled bucket that fits (static).
"""
from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class DeviceBatch:
    rows: np.ndarray  # indices into the encoded rows, in the order they are fed
    seq_len: int  # padded sequence length
    batch_size: int  # padded batch size (> len(rows) only for static engines)

    @property
    def padded_tokens(self) -> int:
        return self.seq_len * self.batch_size


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def padded_length(lengths, pad_multiple: int, max_seq_len: int):
    """What a dynamic engine pads rows of these lengths to: up to the multiple, never past the
    longest the artifact takes (a scalar, or elementwise over an array)."""
    return np.minimum(round_up(lengths, pad_multiple), max(max_seq_len, pad_multiple))


def plan_batches(lengths: np.ndarray, token_budget: int, *, max_seq_len: int, pad_multiple: int = 8,
                 buckets: tuple[tuple[int, int], ...] = (), static: bool = False) -> list[DeviceBatch]:
    """Cut rows into device batches. Every row appears in exactly one batch."""
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.lexsort((np.arange(len(lengths)), lengths))
    # Each row's padded length in feeding order (dynamic engines): ascending, like the rows.
    padded = padded_length(lengths[order], pad_multiple, max_seq_len)
    batches: list[DeviceBatch] = []
    start = 0
    while start < len(order):
        if static:
            batch = _static_batch(order, lengths, start, buckets)
        else:
            batch = _dynamic_batch(order, padded, start, token_budget)
        batches.append(batch)
        start += len(batch.rows)
    return batches


def _dynamic_batch(order, padded, start, token_budget) -> DeviceBatch:
    """The rows from `start` on while the batch's padded size fits the budget (at least one).

    The last row taken sets the padded length, so a batch ending at row i has padded[i] x its
    rows tokens, which never falls as i grows: the batch ends before the first i over budget,
    found in one search over the rows that could fit instead of a Python step per row."""
    first, left = int(padded[start]), len(padded) - start
    could_fit = left if first == 0 else min(left, max(token_budget // first + 1, 1))
    sizes = padded[start:start + could_fit] * np.arange(1, could_fit + 1)
    count = max(int(np.searchsorted(sizes, token_budget, side="right")), 1)
    return DeviceBatch(order[start:start + count], int(padded[start + count - 1]), count)


def _static_batch(order, lengths, start, buckets) -> DeviceBatch:
    if not buckets:
        raise ValueError("a static-shape engine needs compiled buckets")
    first = int(lengths[order[start]])
    fitting = [b for b in buckets if b[1] >= first]
    if not fitting:
        raise ValueError(f"a row of {first} tokens exceeds the largest compiled bucket {max(b[1] for b in buckets)}")
    batch_rows, seq = min(fitting, key=lambda b: b[1])
    end = start
    while end < len(order) and end - start < batch_rows and lengths[order[end]] <= seq:
        end += 1
    return DeviceBatch(order[start:end], seq, batch_rows)


def pad(ids: list[np.ndarray], type_ids: list[np.ndarray], batch: DeviceBatch) -> dict[str, np.ndarray]:
    """Engine feed for one device batch: zero padding, mask 1 on real tokens.

    The batch's rows are joined once and written through the mask in one step, instead of a
    slice assignment per row."""
    shape = (batch.batch_size, batch.seq_len)
    rows = batch.rows.tolist()
    row_ids = [ids[r] for r in rows]
    lengths = np.fromiter(map(len, row_ids), dtype=np.int64, count=len(rows))
    mask = np.zeros(shape, dtype=np.int64)
    real = np.arange(batch.seq_len) < lengths[:, None]
    mask[: len(rows)][real] = 1
    input_ids = np.zeros(shape, dtype=np.int64)
    token_types = np.zeros(shape, dtype=np.int64)
    if len(rows):
        input_ids[: len(rows)][real] = np.concatenate(row_ids)
        token_types[: len(rows)][real] = np.concatenate([type_ids[r] for r in rows])
    if len(rows) < batch.batch_size:
        mask[len(rows):, 0] = 1  # filler rows attend to one token, so no row is all-masked
    return {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": token_types}
