"""A unit's result per artifact task (engines/tasks.py `value_ddl`), in the two forms it takes.

In memory, where a workload assembles its output columns (udfs/contract.py): a score array, an
intent/confidence/top-k triple, or an [n, width] embedding matrix (NaN rows where a unit has no
result). In Arrow, as the scorer hands distinct units to Spark and the result cache keeps them:
the task's `value_ddl` columns, an embedding as its float32 values in little-endian bytes, one
buffer per batch (docs/performance.md). Every conversion is vectorised: no Python per row.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from engines.tasks import Task
from udfs import heads

EMBEDDING_DTYPE = np.dtype("<f4")
TOP_K_TYPE = pa.list_(  # engines/tasks.TOP_K_DDL in Arrow
    pa.struct([("label", pa.string()), ("score", pa.float64())]))


def from_outputs(task: Task, outputs: np.ndarray, good: np.ndarray, manifest, head: dict) -> dict:
    """The units' values from the engine's outputs ([n, width], one row per unit); `good`: the
    units the engine scored. Where `good` is False: NaN, null or a NaN row."""
    if task.embeds:  # the engine leaves a failed unit's row NaN (udfs/execute.py)
        return {"embedding": outputs}
    if not task.pair_input:
        return dict(zip(("intent", "confidence", "top_k"), intents(outputs, good, manifest.labels, head["top_k"])))
    scores = heads.positive_probability(outputs, manifest.positive_label or 0) if len(outputs) else np.zeros(0)
    return {"score": np.where(good, scores, np.nan)}


def to_arrow(task: Task, values: dict, good: np.ndarray) -> dict:
    """In-memory values -> the `value_ddl` columns as the cache stores them (pandas-ready)."""
    if task.embeds:
        return {"embedding": pd.arrays.ArrowExtensionArray(embedding_blobs(values["embedding"], good))}
    return values


def from_arrow(task: Task, columns: dict[str, pa.Array]) -> dict:
    """The `value_ddl` columns of an Arrow batch (nulls where a row has no result) -> in memory."""
    if task.embeds:
        return {"embedding": embedding_matrix(columns["embedding"])}
    if not task.pair_input:
        return {"intent": columns["intent"].to_numpy(zero_copy_only=False).astype(object),
                "confidence": _floats(columns["confidence"]),
                "top_k": pd.arrays.ArrowExtensionArray(columns["top_k"])}
    return {"score": _floats(columns["score"])}


def mask(values: dict, keep: np.ndarray) -> dict:
    """`values` with NaN, null or a NaN row wherever `keep` is False."""
    if keep.all():
        return values
    out = {}
    for name, v in values.items():
        if isinstance(v, pd.arrays.ArrowExtensionArray):
            arr = pa.array(v) if not isinstance(v, pa.Array) else v
            out[name] = pd.arrays.ArrowExtensionArray(pc.if_else(pa.array(keep), arr, pa.nulls(len(arr), arr.type)))
        elif v.dtype == object:
            out[name] = np.where(keep, v, None)
        else:
            out[name] = np.where(keep.reshape(-1, *([1] * (v.ndim - 1))), v, np.nan)
    return out


def scatter(values: dict, ok: np.ndarray) -> dict:
    """Values of the rows where `ok` is True, spread over all rows (no result elsewhere)."""
    if ok.all():
        return values
    out, n = {}, len(ok)
    where = np.flatnonzero(ok)
    for name, v in values.items():
        if isinstance(v, pd.arrays.ArrowExtensionArray):
            index = np.zeros(n, dtype=np.int64)
            index[where] = np.arange(len(where))
            out[name] = pd.arrays.ArrowExtensionArray(pa.array(v).take(pa.array(index, mask=~ok)))
        else:
            full = np.full((n, *v.shape[1:]), None if v.dtype == object else np.nan, dtype=v.dtype)
            full[where] = v
            out[name] = full
    return out


def intents(logits: np.ndarray, good: np.ndarray, labels: tuple[str, ...],
            k: int) -> tuple[np.ndarray, np.ndarray, pd.arrays.ArrowExtensionArray]:
    """intent, confidence and top_k columns from logits; None/NaN where `good` is False.

    top_k is built as one Arrow list-of-structs array from the [rows, k] label indices and
    probabilities (udfs/scorer.py passes it to Spark as it is), not as a dict per label per row."""
    n = len(logits)
    intent = np.full(n, None, dtype=object)
    confidence = np.full(n, np.nan)
    order = np.zeros((0, 0), dtype=np.int64)
    probs = np.zeros((0, 0))
    if good.any():
        order, probs = heads.top_k(logits[good], labels, k)
        intent[good] = np.asarray(labels, dtype=object)[order[:, 0]]
        confidence[good] = probs[:, 0]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.where(good, order.shape[1], 0), out=offsets[1:])
    entries = pa.StructArray.from_arrays(
        [pa.array(labels, pa.string()).take(pa.array(order.ravel())), pa.array(probs.ravel(), pa.float64())],
        names=["label", "score"])
    top = pa.ListArray.from_arrays(pa.array(offsets), entries, type=TOP_K_TYPE, mask=pa.array(~good))
    return intent, confidence, pd.arrays.ArrowExtensionArray(top)


def embedding_blobs(matrix: np.ndarray, good: np.ndarray) -> pa.Array:
    """[n, width] -> n binary values of float32 little-endian bytes (null where `good` is False),
    built over one buffer."""
    n = len(good)
    width = matrix.shape[1] if matrix.ndim == 2 else 0
    data = np.ascontiguousarray(matrix[good], dtype=EMBEDDING_DTYPE).tobytes()
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.where(good, width * EMBEDDING_DTYPE.itemsize, 0), out=offsets[1:])
    validity = pa.py_buffer(np.packbits(good, bitorder="little").tobytes())
    return pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)])


def embedding_matrix(blobs: pa.Array) -> np.ndarray:
    """n binary float32 embeddings (null where a row has none) -> [n, width] float32, NaN rows
    for the nulls. Reads the values buffer at once."""
    blobs = blobs.combine_chunks() if isinstance(blobs, pa.ChunkedArray) else blobs
    valid = blobs.is_valid().to_numpy(zero_copy_only=False)
    present = blobs.filter(pa.array(valid))
    if not len(present):
        return np.full((len(blobs), 0), np.nan, dtype=EMBEDDING_DTYPE)
    offsets = np.frombuffer(present.buffers()[1], np.int32)[present.offset:present.offset + len(present) + 1]
    data = np.frombuffer(present.buffers()[2], np.uint8)[offsets[0]:offsets[-1]]
    vectors = data.view(EMBEDDING_DTYPE).reshape(len(present), -1)
    out = np.full((len(blobs), vectors.shape[1]), np.nan, dtype=EMBEDDING_DTYPE)
    out[valid] = vectors
    return out


def _floats(column: pa.Array) -> np.ndarray:
    return column.to_numpy(zero_copy_only=False).astype(np.float64)
