"""Scoring units: what a run scores once per distinct key, and what the result cache keeps.

A unit is the smallest thing whose result depends on its own texts only: a pair for a
cross-encoder, a query for a classifier, one side's text for a bi-encoder (its embedding). Its
key hashes exactly what decides that result: the texts as the job builds them (after joining
--fields; a pair's two sides in order), the effective max_seq_len and truncation, and the head's
settings. The artifact is not in the key: the cache keeps one folder per manifest digest
(jobs/result_cache.py). A row id is never in it, so an id whose text changed is scored again
and two ids with the same texts share one result.

`Keyer` turns input rows into keyed rows on the workers (validation included, with the same
code as the per-batch path); `UnitScoring` is the workload udfs/scorer.py runs over the distinct
units; jobs/distinct_plan.py joins the results back to the rows.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from udfs import model_outputs, workloads
from udfs.tokenize import CHARS_PER_TOKEN, TRUNCATION

KEY_VERSION = 2  # bump when anything a result depends on, or the key's encoding, changes
INVALID = "_invalid"
TOP_K_DDL = "array<struct<label: string, score: double>>"
# The result columns of each artifact task's unit, as the cache stores them. An embedding is its
# float32 values as little-endian bytes (`embedding_bytes`), chosen when the scorer still went
# through mapInPandas, which converts an array column from pandas one element at a time in Python
# (about 20 s per 89,000 384-wide embeddings on one core, docs/performance.md); it stays the
# cache's format (VALUE_FORMAT), one buffer per batch in Arrow and Parquet.
VALUE_DDL = {
    "pair-classification": "score double",
    "text-classification": f"intent string, confidence double, top_k {TOP_K_DDL}",
    "embedding": "embedding binary",
}
VALUE_FORMAT = 2  # bump when VALUE_DDL's encoding changes: caches ignore entries of another format
EMBEDDING_DTYPE = np.dtype("<f4")
VALUE_COLUMNS = {"pair-classification": ("score",), "text-classification": ("intent", "confidence", "top_k"),
                 "embedding": ("embedding",)}


@dataclasses.dataclass(frozen=True)
class UnitSpec:
    """The run-wide part of every key: task, effective max_seq_len and the head's settings."""

    task: str
    max_seq_len: int
    top_k: int | None = None  # text-classification: part of the stored result

    @property
    def slots(self) -> tuple[str, ...]:
        """Units per input row: a bi-encoder pair has two (its sides), everything else one."""
        return ("left", "right") if self.task == "embedding" else ("unit",)

    @property
    def value_ddl(self) -> str:
        return VALUE_DDL[self.task]

    @property
    def value_columns(self) -> tuple[str, ...]:
        return VALUE_COLUMNS[self.task]

    def key_prefix(self) -> bytes:
        head = {"top_k": self.top_k} if self.task == "text-classification" else {}
        return json.dumps([KEY_VERSION, self.task, self.max_seq_len, TRUNCATION, CHARS_PER_TOKEN, head],
                          sort_keys=True).encode()


def unit_keys(prefix: bytes, texts: Iterable[Sequence[str]]) -> list[str]:
    """128-bit BLAKE2b of the prefix and the unit's texts, each UTF-8 with its byte length in
    front so no two text lists share an encoding; hex, so Spark joins on a plain string. (JSON
    encoding each list took two thirds of the keying time.)"""
    start = hashlib.blake2b(prefix, digest_size=16)
    keys = []
    for unit in texts:
        h = start.copy()
        for text in unit:
            data = text.encode()
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)
        keys.append(h.hexdigest())
    return keys


def embedding_bytes(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=EMBEDDING_DTYPE).tobytes()


def embeddings(blobs) -> np.ndarray:
    """[n, width] float32 from n `embedding_bytes` values (none of them null)."""
    return np.frombuffer(b"".join(blobs), dtype=EMBEDDING_DTYPE).reshape(len(blobs), -1)


def key_column(slot: str) -> str:
    return f"_key_{slot}"


def text_columns(slot: str) -> tuple[str, str]:
    return f"_a_{slot}", f"_b_{slot}"


class Keyer:
    """mapInPandas function: input rows -> id, why the row is invalid (or null), and per slot
    the unit's key and texts (null for invalid rows: they are never scored or cached)."""

    def __init__(self, workload, spec: UnitSpec):
        self.workload = workload
        self.spec = spec

    def ddl(self) -> str:
        cols = [f"{self.workload.id_column} string", f"{INVALID} string"]
        for slot in self.spec.slots:
            a, b = text_columns(slot)
            cols += [f"{key_column(slot)} string", f"{a} string", f"{b} string"]
        return ", ".join(cols)

    def __call__(self, frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        prefix = self.spec.key_prefix()
        for frame in frames:
            invalid, texts = self.workload.checked_texts(frame)
            ok = invalid == None  # noqa: E711 - elementwise on an object array
            out = {self.workload.id_column: frame[self.workload.id_column].to_numpy(), INVALID: invalid}
            for slot, unit in zip(self.spec.slots, _unit_texts(self.spec, texts)):
                a, b = text_columns(slot)
                keys = np.full(len(frame), None, dtype=object)
                cols = [np.full(len(frame), None, dtype=object) for _ in range(2)]
                if ok.any():
                    valid = [t[ok].tolist() for t in unit]
                    keys[ok] = unit_keys(prefix, zip(*valid))
                    for col, values in zip(cols, valid):
                        col[ok] = values
                out.update({key_column(slot): keys, a: cols[0], b: cols[1]})
            yield pd.DataFrame(out)


def _unit_texts(spec: UnitSpec, texts: list[pd.Series]) -> list[list[pd.Series]]:
    """Per slot, the unit's texts: a cross-encoder's pair, a query, or one bi-encoder side."""
    if spec.task == "embedding":
        return [[side] for side in texts]
    return [texts]


class UnitScoring:
    """The workload udfs/scorer.py runs over distinct units (`_key`, `_a`, `_b`): one result per
    unit, in the cache's columns; `_tokens` is the unit's real tokens (what a cache hit saves)."""

    def __init__(self, spec: UnitSpec):
        self.spec = spec

    def output_ddl(self) -> str:
        return f"_key string, {self.spec.value_ddl}, truncated boolean, _tokens long, error string, _model string"

    def prepare(self, runtime, frame: pd.DataFrame) -> workloads.Prepared:
        a = frame["_a"].tolist()
        if self.spec.task == "pair-classification":
            tokenized = model_outputs.tokenize_pairs(runtime, a, frame["_b"].tolist())
        else:
            tokenized = model_outputs.tokenize_texts(runtime, a)
        ok = np.ones(len(frame), dtype=bool)
        return workloads.Prepared(frame, np.full(len(frame), None, dtype=object), ok, tokenized)

    def finish(self, runtime, prepared: workloads.Prepared, token_budget: int,
               progress=None) -> tuple[pd.DataFrame, model_outputs.Scored]:
        frame, tok = prepared.frame, prepared.tokenized
        if self.spec.task == "pair-classification":
            scored = model_outputs.run_pairs(runtime, tok, token_budget, progress)
        else:
            scored = model_outputs.run_texts(runtime, tok, token_budget, progress)
        errors = np.asarray(scored.errors, dtype=object) if len(scored.errors) else np.full(len(frame), None, dtype=object)
        good = errors == None  # noqa: E711 - elementwise on an object array
        out = {"_key": frame["_key"].to_numpy()}
        if self.spec.task == "pair-classification":
            out["score"] = np.where(good, scored.values, np.nan)
        elif self.spec.task == "text-classification":
            out["intent"], out["confidence"], out["top_k"] = workloads.intents(
                scored.values, good, runtime.manifest.labels, self.spec.top_k)
        else:  # float32 is what every engine returns, so the cache stores embeddings losslessly
            out["embedding"] = [embedding_bytes(v) if g else None for v, g in zip(scored.values, good)]
        # _model: the artifact that scored (--fallback-model's where a worker refused --model's)
        out.update(truncated=scored.truncated, _tokens=tok.enc.lengths[tok.left], error=errors, _model=runtime.manifest.model_id)
        return pd.DataFrame(out), scored
