"""Texts -> model outputs per input row, for each artifact task.

Pairs go through a cross-encoder (one encoded row per pair) or a bi-encoder (each distinct
text encoded once, then the cosine of the two sides). Single texts go through a classifier.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from udfs import heads
from udfs.execute import RunStats, run_encoded
from udfs.tokenize import distinct_positions


@dataclasses.dataclass
class Scored:
    values: np.ndarray  # [n] scores, or [n, C] logits
    errors: list  # None or a reason, per row
    truncated: np.ndarray
    stats: RunStats


SINGLE_TEXT_TASKS = ("text-classification", "embedding")  # a classifier's queries, a bi-encoder's sides


@dataclasses.dataclass
class Tokenized:
    """The CPU half of scoring a batch (tokenize, find distinct texts); the engine half follows.

    Split so that a worker can tokenize the next Arrow batch while the engine runs this one.
    """

    enc: object  # udfs.tokenize.Encoded
    tokenize_seconds: float
    left: np.ndarray | None = None  # embedding pairs: row -> index of its left text in `enc`
    right: np.ndarray | None = None


def tokenize_pairs(runtime, left: list[str], right: list[str]) -> Tokenized:
    task = runtime.manifest.task
    t0 = time.perf_counter()
    if task == "pair-classification":
        enc = runtime.encoder.encode_pairs(left, right)
        return Tokenized(enc, time.perf_counter() - t0)
    if task == "embedding":
        distinct, rows = distinct_positions(left + right)
        rows = np.arange(len(distinct)) if rows is None else rows
        enc = runtime.encoder.encode(distinct)  # all distinct: the encoder finds nothing more to share
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
        progress(int((done[tok.left] & done[tok.right]).sum()) if tok.left is not None else int(done.sum()))

    return on_rows


def run_pairs(runtime, tok: Tokenized, token_budget: int, progress=None) -> Scored:
    manifest, enc = runtime.manifest, tok.enc
    run = run_encoded(runtime.engine, enc, token_budget, rows_done(tok, progress))
    run.stats.tokenize_seconds = tok.tokenize_seconds
    if manifest.task == "pair-classification":
        scores = heads.positive_probability(run.outputs, manifest.positive_label or 0)
        return Scored(scores, run.errors, enc.truncated, run.stats)
    li, ri = tok.left, tok.right
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
    enc = runtime.encoder.encode(texts)
    return Tokenized(enc, time.perf_counter() - t0)


def run_texts(runtime, tok: Tokenized, token_budget: int, progress=None) -> Scored:
    run = run_encoded(runtime.engine, tok.enc, token_budget, rows_done(tok, progress))
    run.stats.tokenize_seconds = tok.tokenize_seconds
    return Scored(run.outputs, run.errors, tok.enc.truncated, run.stats)
