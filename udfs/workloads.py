"""The jobs' workloads (udfs/contract.py): how rows become units and unit results become columns,
the only thing the jobs do differently. Everything else (tokenize, batch, engine, dedup, cache,
metrics) is shared."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pyarrow as pa

from engines.tasks import Task
from udfs import heads, unit_values, validate
from udfs.contract import ID_COUNT, Workload


def _flag_columns(workload, flags: dict[str, tuple[str, list[str]]]) -> dict[str, str]:
    """{column: the flag as typed} for the columns named by a flag set to other than its default
    (`flags`: field -> (flag, the columns it names))."""
    named = {}
    for field, (flag, columns) in flags.items():
        value = getattr(workload, field)
        if value != getattr(type(workload), field):
            typed = ",".join(value) if isinstance(value, tuple) else value
            named.update({c: f"{flag} {typed}" for c in columns})
    return named


def _id_problems(frame: pd.DataFrame, id_column: str) -> np.ndarray:
    return validate.id_problems(frame[id_column], frame[ID_COUNT], id_column)


@dataclasses.dataclass(frozen=True)
class Duplicates(Workload):
    """Product pairs: `pair_id` plus `left_<field>` / `right_<field>` per field."""

    fields: tuple[str, ...] = ("title", "brand", "description")
    id_column: str = "pair_id"
    threshold: float | None = None  # None: the artifact's threshold
    strict_fields: bool = False  # every field's columns are required, not only the first's
    tasks = ("pair-classification", "embedding")

    def slots(self, task: Task) -> tuple[str, ...]:
        return ("left", "right") if task.embeds else ("pair",)

    @property
    def text_columns(self) -> list[str]:
        return [f"{side}_{f}" for side in ("left", "right") for f in self.fields]

    @property
    def required_columns(self) -> list[str]:
        fields = self.fields if self.strict_fields else self.fields[:1]
        return [self.id_column] + [f"{side}_{f}" for side in ("left", "right") for f in fields]

    @property
    def optional_columns(self) -> list[str]:
        return [c for c in self.text_columns if c not in self.required_columns]

    def flag_columns(self) -> dict[str, str]:
        return _flag_columns(self, {"id_column": ("--id-column", [self.id_column]),
                                    "fields": ("--fields", self.text_columns)})

    def unit_noun(self, task: Task) -> str:
        return "texts" if task.embeds else "pairs"

    def default_dedup(self, task: Task) -> str:
        return "run" if task.embeds else "batch"  # a product is a side of many candidate pairs

    def value_ddl(self) -> str:
        return "score double, is_duplicate boolean"

    def side(self, frame: pd.DataFrame, side: str) -> pd.Series:
        """A side's text: its fields joined in order; null only when every field is null."""
        cols = [frame[f"{side}_{f}"] for f in self.fields if f"{side}_{f}" in frame]
        parts = [c.fillna("").astype(str).str.strip() for c in cols]
        joined = parts[0].str.cat(parts[1:], sep=" ").str.strip() if len(parts) > 1 else parts[0]
        return joined.where(pd.concat(cols, axis=1).notna().any(axis=1), None)

    def checked_units(self, frame: pd.DataFrame, task: Task) -> tuple[np.ndarray, list[list[pd.Series]]]:
        left, right = self.side(frame, "left"), self.side(frame, "right")
        invalid = validate.first_problem(_id_problems(frame, self.id_column),
                                         validate.text_problems(left, "left side"),
                                         validate.text_problems(right, "right side"))
        return invalid, ([[left], [right]] if task.embeds else [[left, right]])

    def values(self, task: Task, results: dict[str, dict], ok: np.ndarray, manifest) -> dict:
        if task.embeds:
            left, right = results["left"]["embedding"], results["right"]["embedding"]
            score = np.full(len(ok), np.nan)
            score[ok] = heads.cosine(left, right) if ok.all() else heads.cosine(left[ok], right[ok])
        else:
            score = np.where(ok, results["pair"]["score"], np.nan)
        threshold = manifest.threshold if self.threshold is None else self.threshold
        scored = ~np.isnan(score)  # a zero-norm embedding has no cosine: no label either
        return {"score": score,
                "is_duplicate": pd.array(np.where(scored, score >= threshold, None), dtype="boolean")}


class _OneText(Workload):
    """A row of an id and one text column, one unit per row: what QueryIntent and EmbedTexts share.
    Subclasses name the unit's slot and the dataclass field that names the text column (its flag
    is that field's name as a flag)."""

    slot: str
    text_field: str

    @property
    def text_column_name(self) -> str:
        return getattr(self, self.text_field)

    def slots(self, task: Task) -> tuple[str, ...]:
        return (self.slot,)

    @property
    def text_columns(self) -> list[str]:
        return [self.text_column_name]

    def flag_columns(self) -> dict[str, str]:
        return _flag_columns(self, {"id_column": ("--id-column", [self.id_column]),
                                    self.text_field: ("--" + self.text_field.replace("_", "-"), self.text_columns)})

    def checked_units(self, frame: pd.DataFrame, task: Task) -> tuple[np.ndarray, list[list[pd.Series]]]:
        texts = frame[self.text_column_name]
        invalid = validate.first_problem(_id_problems(frame, self.id_column),
                                         validate.text_problems(texts, self.text_column_name))
        return invalid, [[texts]]


@dataclasses.dataclass(frozen=True)
class QueryIntent(_OneText):
    """Search queries: `query_id` and `query` (names settable); intent, confidence, top-k."""

    id_column: str = "query_id"
    query_column: str = "query"
    top_k: int = 3
    tasks = ("text-classification",)
    slot, text_field = "query", "query_column"

    def unit_noun(self, task: Task) -> str:
        return "queries"

    def head(self, task: Task) -> dict:
        return {"top_k": self.top_k}

    def value_ddl(self) -> str:
        return "intent string, confidence double, top_k array<struct<label: string, score: double>>"

    def values(self, task: Task, results: dict[str, dict], ok: np.ndarray, manifest) -> dict:
        return unit_values.mask(results["query"], ok)


@dataclasses.dataclass(frozen=True)
class EmbedTexts(_OneText):
    """Texts to embed: `id` and `text` (names settable); each text's vector and its width."""

    id_column: str = "id"
    text_column: str = "text"
    tasks = ("embedding",)
    slot, text_field = "text", "text_column"

    def unit_noun(self, task: Task) -> str:
        return "texts"

    def default_dedup(self, task: Task) -> str:
        return "run"  # a catalogue repeats its texts across batches: each is embedded once per run

    def value_ddl(self) -> str:
        return "embedding array<float>, dim int"

    def values(self, task: Task, results: dict[str, dict], ok: np.ndarray, manifest) -> dict:
        vectors = results["text"]["embedding"]
        width = vectors.shape[1] if vectors.ndim == 2 else 0
        flat = pa.array(np.ascontiguousarray(vectors[ok], dtype=np.float32).ravel(), pa.float32())
        offsets = np.zeros(len(ok) + 1, dtype=np.int32)
        np.cumsum(np.where(ok, width, 0), out=offsets[1:])
        embedding = pa.ListArray.from_arrays(pa.array(offsets), flat, type=pa.list_(pa.float32()), mask=pa.array(~ok))
        return {"embedding": pd.arrays.ArrowExtensionArray(embedding),
                "dim": pd.array(np.where(ok, width, None), dtype="Int32")}
