"""Units' texts -> the engine's outputs, per slot and row, for any artifact task.

A row has one unit per slot of its workload (udfs/contract.py): a cross-encoder's pair, a
query, one side of a bi-encoder pair. Every unit of a batch is tokenized in one call, and each
distinct unit (whatever its slot) goes through the engine once.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from engines.tasks import task as task_of
from udfs.execute import RunStats, run_encoded


@dataclasses.dataclass
class Scored:
    outputs: np.ndarray  # [slots, n, width] engine outputs (logits or embedding); NaN where a unit failed
    errors: np.ndarray  # [slots, n] None or why the unit failed
    truncated: np.ndarray  # [slots, n]
    stats: RunStats


@dataclasses.dataclass
class Tokenized:
    """The CPU half of scoring a batch: each distinct unit tokenized once (`enc`) and, per slot and
    row, which of them it is. The engine half runs `enc` alone, so a unit repeated within a batch
    costs the engine nothing more. Split so that a worker can tokenize the next Arrow batch while
    the engine runs this one.
    """

    enc: object  # udfs.tokenize.Encoded: one row per distinct unit
    tokenize_seconds: float
    rows: np.ndarray  # [slots, n]: index in `enc` of each row's unit in each slot


def tokenize_units(runtime, slots: list[list[list[str]]]) -> Tokenized:
    """`slots`: per slot, the unit's texts as lists over the rows: two (left, right) for a
    pair-input artifact, one otherwise."""
    task = task_of(runtime.manifest.task)
    n = len(slots[0][0]) if slots else 0
    texts = [t for slot in slots for t in slot[0]]
    t0 = time.perf_counter()
    if task.pair_input:
        enc, index = runtime.encoder.encode_pairs_distinct(texts, [t for slot in slots for t in slot[1]])
    else:
        enc, index = runtime.encoder.encode_distinct(texts)
    return Tokenized(enc, time.perf_counter() - t0, np.asarray(index, dtype=np.int64).reshape(len(slots), n))


def rows_done(tok: Tokenized, progress):
    """An `on_rows` for run_encoded that tells `progress(n)` how many rows have every unit of
    theirs through the engine (a bi-encoder pair waits for both of its sides)."""
    if progress is None:
        return None
    done = np.zeros(len(tok.enc.lengths), dtype=bool)

    def on_rows(rows) -> None:
        done[rows] = True
        progress(int(done[tok.rows].all(axis=0).sum()))

    return on_rows


def run_units(runtime, tok: Tokenized, token_budget: int, progress=None) -> Scored:
    run = run_encoded(runtime.engine, tok.enc, token_budget, rows_done(tok, progress))
    run.stats.tokenize_seconds = tok.tokenize_seconds
    errors = np.array(run.errors, dtype=object)
    return Scored(run.outputs[tok.rows], errors[tok.rows], tok.enc.truncated[tok.rows], run.stats)
