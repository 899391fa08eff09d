"""The query-intent head's columns and the scorer's Arrow output, without Spark."""
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from udfs import heads
from udfs.metrics import COLUMNS as METRIC_COLUMNS, BatchMetrics
from udfs.scorer import to_record_batch
from udfs.unit_values import intents

LABELS = ("billing", "delivery", "returns", "search")


def per_row_top_k(logits, good, k):
    """top_k as a list of {label, score} dicts per good row, None elsewhere: the column's meaning."""
    out = [None] * len(logits)
    if good.any():
        order, probs = heads.top_k(logits[good], LABELS, k)
        for row, o, ps in zip(np.flatnonzero(good), order, probs):
            out[row] = [{"label": LABELS[i], "score": float(p)} for i, p in zip(o, ps)]
    return out


@pytest.mark.parametrize("k", [1, 3, 10])
def test_intents_columns_match_the_per_row_definition(k):
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(200, len(LABELS)))
    logits[::9] = 0.5  # every label tied: order by label index
    good = rng.random(200) > 0.25
    intent, confidence, top = intents(logits, good, LABELS, k)
    want = per_row_top_k(logits, good, k)
    assert pa.array(top).to_pylist() == want
    assert list(intent) == [t[0]["label"] if t else None for t in want]
    np.testing.assert_array_equal(confidence, [t[0]["score"] if t else np.nan for t in want])
    assert all(len(t) == min(k, len(LABELS)) for t in want if t)


@pytest.mark.parametrize("good", [np.zeros(4, dtype=bool), np.zeros(0, dtype=bool)])
def test_intents_with_no_good_rows_are_all_null(good):
    intent, confidence, top = intents(np.full((len(good), len(LABELS)), np.nan), good, LABELS, 3)
    assert pa.array(top).to_pylist() == [None] * len(good) and list(intent) == [None] * len(good)
    assert np.isnan(confidence).all()


def _schema():
    entry = pa.struct([("label", pa.string()), ("score", pa.float64())])
    fields = [("id", pa.string()), ("confidence", pa.float64()), ("top_k", pa.list_(pa.field("element", entry))),
              ("truncated", pa.bool_()), ("flag", pa.bool_())]
    metric_types = [pa.int64(), pa.int64(), pa.int32(), pa.float64(), pa.int32(), pa.string(), pa.float64(),
                    pa.float64(), pa.string()]
    return pa.schema(fields + list(zip(METRIC_COLUMNS, metric_types)))


def test_record_batch_nulls_nan_keeps_arrow_columns_and_puts_metrics_on_the_first_row():
    good = np.array([True, False, True])
    _, confidence, top = intents(np.array([[1.0, 2, 3, 4], [0, 0, 0, 0], [4, 3, 2, 1]]), good, LABELS, 2)
    frame = pd.DataFrame({"id": np.array(["a", None, "c"], dtype=object), "confidence": confidence, "top_k": top,
                          "truncated": np.array([False, True, False]),
                          "flag": pd.array([True, None, False], dtype="boolean")})
    metrics = BatchMetrics(5, 8, 1, 0.25, 0, "worker", 0.5, 0.75, "[0, 0]")
    batch = to_record_batch(frame, metrics, _schema())
    assert batch.schema.equals(_schema())
    rows = batch.to_pylist()
    assert [r["id"] for r in rows] == ["a", None, "c"]
    assert rows[1]["confidence"] is None and rows[1]["top_k"] is None and rows[1]["flag"] is None
    assert rows[0]["top_k"] == per_row_top_k(np.array([[1.0, 2, 3, 4]]), np.array([True]), 2)[0]
    assert tuple(rows[0][c] for c in METRIC_COLUMNS) == metrics.values()
    assert all(rows[i][c] is None for i in (1, 2) for c in METRIC_COLUMNS)


def test_record_batch_of_an_empty_frame():
    frame = pd.DataFrame({"id": np.array([], dtype=object), "confidence": np.array([]),
                          "top_k": intents(np.zeros((0, 4)), np.zeros(0, dtype=bool), LABELS, 2)[2],
                          "truncated": np.array([], dtype=bool), "flag": pd.array([], dtype="boolean")})
    batch = to_record_batch(frame, None, _schema())
    assert batch.num_rows == 0 and batch.schema.equals(_schema())
