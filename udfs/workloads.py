"""How rows become texts and how model outputs become columns: the only thing the two jobs
do differently. Everything else (tokenize, batch, engine, metrics) is shared."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pyarrow as pa

from udfs import heads, model_outputs, validate

ID_COUNT = "_id_count"  # added by the job: how often each id occurs in the input
COMMON_COLUMNS = "model string, status string, error string, truncated boolean"


def _status(frame_len: int, invalid: np.ndarray, errors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    status = np.full(frame_len, "ok", dtype=object)
    error = np.full(frame_len, None, dtype=object)
    bad_engine = errors != None  # noqa: E711 - elementwise on an object array
    status[bad_engine], error[bad_engine] = "error", errors[bad_engine]
    bad_input = invalid != None  # noqa: E711
    status[bad_input], error[bad_input] = "invalid_input", invalid[bad_input]
    return status, error


def _scatter(n: int, ok: np.ndarray, scored: model_outputs.Scored) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Spread results for the valid rows back over all rows (invalid rows: NaN, no error)."""
    width = scored.values.shape[1:] if scored.values.ndim > 1 else ()
    values = np.full((n, *width), np.nan)
    values[ok] = scored.values
    errors = np.full(n, None, dtype=object)
    errors[ok] = np.asarray(scored.errors, dtype=object) if len(scored.errors) else errors[ok]
    truncated = np.zeros(n, dtype=bool)
    truncated[ok] = scored.truncated
    return values, errors, truncated


def _flag_columns(workload, flags: dict[str, tuple[str, list[str]]]) -> dict[str, str]:
    """{column: the flag as typed} for the columns named by a flag set to other than its default
    (`flags`: field -> (flag, the columns it names)). A column missing from the input is then
    more likely the flag's misspelling than the input's."""
    named = {}
    for field, (flag, columns) in flags.items():
        value = getattr(workload, field)
        if value != getattr(type(workload), field):
            typed = ",".join(value) if isinstance(value, tuple) else value
            named.update({c: f"{flag} {typed}" for c in columns})
    return named


@dataclasses.dataclass
class Prepared:
    """An Arrow batch checked and tokenized (`Workload.prepare`), ready for the engine (`finish`)."""

    frame: pd.DataFrame
    invalid: np.ndarray
    ok: np.ndarray
    tokenized: model_outputs.Tokenized


@dataclasses.dataclass(frozen=True)
class Duplicates:
    """Product pairs: `pair_id` plus `left_<field>` / `right_<field>` per field."""

    fields: tuple[str, ...] = ("title", "brand", "description")
    id_column: str = "pair_id"
    threshold: float | None = None  # None: the artifact's threshold
    strict_fields: bool = False  # every field's columns are required, not only the first's
    tasks = ("pair-classification", "embedding")

    @property
    def text_columns(self) -> list[str]:
        return [f"{side}_{f}" for side in ("left", "right") for f in self.fields]

    @property
    def required_columns(self) -> list[str]:
        fields = self.fields if self.strict_fields else self.fields[:1]
        return [self.id_column] + [f"{side}_{f}" for side in ("left", "right") for f in fields]

    @property
    def optional_columns(self) -> list[str]:
        """Field columns read as empty text when absent (the job reports them as fields_absent)."""
        return [c for c in self.text_columns if c not in self.required_columns]

    def flag_columns(self) -> dict[str, str]:
        return _flag_columns(self, {"id_column": ("--id-column", [self.id_column]),
                                    "fields": ("--fields", self.text_columns)})

    def output_ddl(self) -> str:
        return f"{self.id_column} string, score double, is_duplicate boolean, {COMMON_COLUMNS}"

    def side(self, frame: pd.DataFrame, side: str) -> pd.Series:
        """A side's text: its fields joined in order; null only when every field is null."""
        cols = [frame[f"{side}_{f}"] for f in self.fields if f"{side}_{f}" in frame]
        parts = [c.fillna("").astype(str).str.strip() for c in cols]
        joined = parts[0].str.cat(parts[1:], sep=" ").str.strip() if len(parts) > 1 else parts[0]
        return joined.where(pd.concat(cols, axis=1).notna().any(axis=1), None)

    def checked_texts(self, frame: pd.DataFrame) -> tuple[np.ndarray, list[pd.Series]]:
        """(why each row cannot be scored, or None; its texts): the left and right sides."""
        left, right = self.side(frame, "left"), self.side(frame, "right")
        invalid = validate.first_problem(
            validate.id_problems(frame[self.id_column], frame[ID_COUNT], self.id_column),
            validate.text_problems(left, "left side"), validate.text_problems(right, "right side"))
        return invalid, [left, right]

    def prepare(self, runtime, frame: pd.DataFrame) -> Prepared:
        invalid, (left, right) = self.checked_texts(frame)
        ok = invalid == None  # noqa: E711 - elementwise on an object array
        return Prepared(frame, invalid, ok, model_outputs.tokenize_pairs(runtime, left[ok].tolist(), right[ok].tolist()))

    def finish(self, runtime, prepared: Prepared, token_budget: int,
               progress=None) -> tuple[pd.DataFrame, model_outputs.Scored]:
        """`progress(n)`: n of this batch's valid rows scored so far (live progress)."""
        frame, invalid, ok = prepared.frame, prepared.invalid, prepared.ok
        scored = model_outputs.run_pairs(runtime, prepared.tokenized, token_budget, progress)
        scores, errors, truncated = _scatter(len(frame), ok, scored)
        status, error = _status(len(frame), invalid, errors)
        threshold = runtime.manifest.threshold if self.threshold is None else self.threshold
        good = status == "ok"
        scores[~good] = np.nan
        out = pd.DataFrame({
            self.id_column: frame[self.id_column].astype(object).to_numpy(),
            "score": scores,
            "is_duplicate": pd.array(np.where(good, scores >= threshold, None), dtype="boolean"),
            "model": runtime.manifest.model_id, "status": status, "error": error, "truncated": truncated,
        })
        return out, scored


@dataclasses.dataclass(frozen=True)
class QueryIntent:
    """Search queries: `query_id` and `query` (names settable); intent, confidence, top-k."""

    id_column: str = "query_id"
    query_column: str = "query"
    top_k: int = 3
    tasks = ("text-classification",)

    @property
    def text_columns(self) -> list[str]:
        return [self.query_column]

    @property
    def required_columns(self) -> list[str]:
        return [self.id_column, self.query_column]

    @property
    def optional_columns(self) -> list[str]:
        return []

    def flag_columns(self) -> dict[str, str]:
        return _flag_columns(self, {"id_column": ("--id-column", [self.id_column]),
                                    "query_column": ("--query-column", [self.query_column])})

    def output_ddl(self) -> str:
        return (f"{self.id_column} string, intent string, confidence double, "
                f"top_k array<struct<label: string, score: double>>, {COMMON_COLUMNS}")

    def checked_texts(self, frame: pd.DataFrame) -> tuple[np.ndarray, list[pd.Series]]:
        """(why each row cannot be scored, or None; its texts): the query."""
        queries = frame[self.query_column]
        invalid = validate.first_problem(
            validate.id_problems(frame[self.id_column], frame[ID_COUNT], self.id_column),
            validate.text_problems(queries, self.query_column))
        return invalid, [queries]

    def prepare(self, runtime, frame: pd.DataFrame) -> Prepared:
        invalid, (queries,) = self.checked_texts(frame)
        ok = invalid == None  # noqa: E711 - elementwise on an object array
        return Prepared(frame, invalid, ok, model_outputs.tokenize_texts(runtime, queries[ok].tolist()))

    def finish(self, runtime, prepared: Prepared, token_budget: int,
               progress=None) -> tuple[pd.DataFrame, model_outputs.Scored]:
        """`progress(n)`: n of this batch's valid rows scored so far (live progress)."""
        frame, invalid, ok = prepared.frame, prepared.invalid, prepared.ok
        scored = model_outputs.run_texts(runtime, prepared.tokenized, token_budget, progress)
        labels = runtime.manifest.labels
        logits = np.full((len(frame), len(labels)), np.nan)
        errors = np.full(len(frame), None, dtype=object)
        truncated = np.zeros(len(frame), dtype=bool)
        if ok.any():
            logits[ok], errors[ok], truncated[ok] = scored.values, scored.errors, scored.truncated
        status, error = _status(len(frame), invalid, errors)
        intent, confidence, top = intents(logits, status == "ok", labels, self.top_k)
        out = pd.DataFrame({
            self.id_column: frame[self.id_column].astype(object).to_numpy(),
            "intent": intent, "confidence": confidence, "top_k": top,
            "model": runtime.manifest.model_id, "status": status, "error": error, "truncated": truncated,
        })
        return out, scored


TOP_K_TYPE = pa.list_(pa.struct([("label", pa.string()), ("score", pa.float64())]))


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
