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

from engines.tasks import task as task_of
from udfs import unit_values
from udfs.contract import Prepared, Workload
from udfs.model_outputs import Scored, run_units, tokenize_units
from udfs.tokenize import CHARS_PER_TOKEN, TRUNCATION

KEY_VERSION = 2  # bump when anything a result depends on, or the key's encoding, changes
INVALID = "_invalid"
# Bump when the encoding of a task's value_ddl (engines/tasks.py) changes: caches ignore entries
# of another format. An embedding is its float32 values as little-endian bytes, chosen when the
# scorer still went through mapInPandas, which converts an array column from pandas one element
# at a time in Python (about 20 s per 89,000 384-wide embeddings on one core, docs/performance.md).
VALUE_FORMAT = 2


@dataclasses.dataclass(frozen=True)
class UnitSpec:
    """The run-wide part of every key: task, effective max_seq_len and the head's settings; and
    the slots of a row (udfs/contract.py)."""

    task: str
    max_seq_len: int
    slots: tuple[str, ...]
    head: tuple = ()  # the workload's head settings as sorted (name, value) items

    @classmethod
    def of(cls, workload: Workload, task: str, max_seq_len: int) -> "UnitSpec":
        t = task_of(task)
        return cls(task, max_seq_len, workload.slots(t), tuple(sorted(workload.head(t).items())))

    @property
    def value_ddl(self) -> str:
        return task_of(self.task).value_ddl

    @property
    def value_columns(self) -> tuple[str, ...]:
        return task_of(self.task).value_columns

    def key_prefix(self) -> bytes:
        return json.dumps([KEY_VERSION, self.task, self.max_seq_len, TRUNCATION, CHARS_PER_TOKEN, dict(self.head)],
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
        task = task_of(self.spec.task)
        for frame in frames:
            invalid, units = self.workload.checked_units(frame, task)
            ok = invalid == None  # noqa: E711 - elementwise on an object array
            out = {self.workload.id_column: frame[self.workload.id_column].to_numpy(), INVALID: invalid}
            for slot, unit in zip(self.spec.slots, units):
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


class UnitScoring:
    """What udfs/scorer.py runs over distinct units (`_key`, `_a`, `_b`): one result per unit, in
    the cache's columns; `_tokens` is the unit's real tokens (what a cache hit saves)."""

    def __init__(self, spec: UnitSpec):
        self.spec = spec

    def output_ddl(self) -> str:
        return f"_key string, {self.spec.value_ddl}, truncated boolean, _tokens long, error string, _model string"

    def prepare(self, runtime, frame: pd.DataFrame) -> Prepared:
        texts = [frame["_a"].tolist()] + ([frame["_b"].tolist()] if task_of(self.spec.task).pair_input else [])
        ok = np.ones(len(frame), dtype=bool)
        return Prepared(frame, np.full(len(frame), None, dtype=object), ok, tokenize_units(runtime, [texts]))

    def finish(self, runtime, prepared: Prepared, token_budget: int, progress=None) -> tuple[pd.DataFrame, Scored]:
        task, tok = task_of(self.spec.task), prepared.tokenized
        scored = run_units(runtime, tok, token_budget, progress)
        errors = scored.errors[0]
        good = errors == None  # noqa: E711 - elementwise on an object array
        values = unit_values.from_outputs(task, scored.outputs[0], good, runtime.manifest, dict(self.spec.head))
        # _model: the artifact that scored (--fallback-model's where a worker refused --model's)
        out = {"_key": prepared.frame["_key"].to_numpy(), **unit_values.to_arrow(task, values, good),
               "truncated": scored.truncated[0], "_tokens": tok.enc.lengths[tok.rows[0]], "error": errors,
               "_model": runtime.manifest.model_id}
        return pd.DataFrame(out), scored
