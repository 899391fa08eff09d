"""Texts -> model outputs per input row, for each artifact task.

Pairs go through a cross-encoder (one encoded row per pair) or a bi-encoder (one per text, then
the cosine of the two sides); single texts go through a classifier. Within a batch, each
distinct pair or text goes through the engine once, whatever the task.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from udfs import heads
from udfs.execute import RunStats, run_encoded


@dataclasses.dataclass
class Scored:
    values: np.ndarray  # [n] scores, or [n, C] logits
    errors: list  # None or a reason, per row
    truncated: np.ndarray
    stats: RunStats


SINGLE_TEXT_TASKS = ("text-classification", "embedding")  # a classifier's queries, a bi-encoder's sides


@dataclasses.dataclass
class Tokenized:
    """The CPU half of scoring a batch: each distinct input tokenized once (`enc`) and, per row, which
    of them it needs. The engine half runs `enc` alone, so an input repeated within a batch costs
    the engine nothing more. Split so that a worker can tokenize the next Arrow batch while the
    engine runs this one.
    """

    enc: object  # udfs.tokenize.Encoded: one row per distinct input
    tokenize_seconds: float
    left: np.ndarray  # row -> index in `enc` of its input (a bi-encoder pair: of its left text)
    right: np.ndarray | None = None  # a bi-encoder pair: row -> index in `enc` of its right text


def tokenize_pairs(runtime, left: list[str], right: list[str]) -> Tokenized:
    task = runtime.manifest.task
    t0 = time.perf_counter()
    if task == "pair-classification":
        enc, rows = runtime.encoder.encode_pairs_distinct(left, right)
        return Tokenized(enc, time.perf_counter() - t0, rows)
    if task == "embedding":
        enc, rows = runtime.encoder.encode_distinct(left + right)
        return Tokenized(enc, time.perf_counter() - t0, rows[:len(left)], rows[len(left):])
    raise ValueError(f"a {task} artifact cannot score pairs")


def rows_done(tok: Tokenized, progress):
    """An `on_rows` for run_encoded that tells `progress(n)` how many input rows have every
    text of theirs through the engine (a bi-encoder pair waits for both of its sides)."""
    if progress is None:
        return None
    done = np.zeros(len(tok.enc.lengths), dtype=bool)

    def on_rows(rows) -> None:
        done[rows] = True
        both = done[tok.left] & done[tok.right] if tok.right is not None else done[tok.left]
        progress(int(both.sum()))

    return on_rows


def run_pairs(runtime, tok: Tokenized, token_budget: int, progress=None) -> Scored:
    manifest, enc = runtime.manifest, tok.enc
    run = run_encoded(runtime.engine, enc, token_budget, rows_done(tok, progress))
    run.stats.tokenize_seconds = tok.tokenize_seconds
    li, ri = tok.left, tok.right
    if manifest.task == "pair-classification":
        scores = heads.positive_probability(run.outputs, manifest.positive_label or 0)
        return Scored(scores[li], [run.errors[i] for i in li], enc.truncated[li], run.stats)
    scores = heads.cosine(run.outputs[li], run.outputs[ri])
    errors = [run.errors[a] or run.errors[b] for a, b in zip(li, ri)]
    return Scored(scores, errors, enc.truncated[li] | enc.truncated[ri], run.stats)


def score_pairs(runtime, left: list[str], right: list[str], token_budget: int) -> Scored:
    return run_pairs(runtime, tokenize_pairs(runtime, left, right), token_budget)


def tokenize_texts(runtime, texts: list[str]) -> Tokenized:
    """Single texts: queries for a classifier, or side texts for a bi-encoder's embeddings."""
    if runtime.manifest.task not in SINGLE_TEXT_TASKS:
        raise ValueError(f"a {runtime.manifest.task} artifact cannot score single texts")
    t0 = time.perf_counter()
    enc, rows = runtime.encoder.encode_distinct(texts)
    return Tokenized(enc, time.perf_counter() - t0, rows)


def run_texts(runtime, tok: Tokenized, token_budget: int, progress=None) -> Scored:
    run = run_encoded(runtime.engine, tok.enc, token_budget, rows_done(tok, progress))
    run.stats.tokenize_seconds = tok.tokenize_seconds
    rows = tok.left
    return Scored(run.outputs[rows], [run.errors[i] for i in rows], tok.enc.truncated[rows], run.stats)
