"""Texts -> model outputs per input row, for each artifact task.

Pairs go through a cross-encoder (one encoded row per pair) or a bi-encoder (each distinct
text encoded once, then the cosine of the two sides). Single texts go through a classifier.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from udfs import heads
from udfs.execute import RunStats, run_encoded


@dataclasses.dataclass
class Scored:
    values: np.ndarray  # [n] scores, or [n, C] logits
    errors: list  # None or a reason, per row
    truncated: np.ndarray
    stats: RunStats


def score_pairs(runtime, left: list[str], right: list[str], token_budget: int) -> Scored:
    manifest = runtime.manifest
    if manifest.task == "pair-classification":
        enc = runtime.encoder.encode_pairs(left, right)
        run = run_encoded(runtime.engine, enc, token_budget)
        scores = heads.positive_probability(run.outputs, manifest.positive_label or 0)
        return Scored(scores, run.errors, enc.truncated, run.stats)
    if manifest.task == "embedding":
        distinct = list(dict.fromkeys(left + right))
        position = {text: i for i, text in enumerate(distinct)}
        li = np.fromiter((position[t] for t in left), dtype=np.int64, count=len(left))
        ri = np.fromiter((position[t] for t in right), dtype=np.int64, count=len(right))
        enc = runtime.encoder.encode(distinct)
        run = run_encoded(runtime.engine, enc, token_budget)
        scores = heads.cosine(run.outputs[li], run.outputs[ri])
        errors = [run.errors[a] or run.errors[b] for a, b in zip(li, ri)]
        return Scored(scores, errors, enc.truncated[li] | enc.truncated[ri], run.stats)
    raise ValueError(f"a {manifest.task} artifact cannot score pairs")


def score_texts(runtime, texts: list[str], token_budget: int) -> Scored:
    if runtime.manifest.task != "text-classification":
        raise ValueError(f"a {runtime.manifest.task} artifact cannot classify single texts")
    enc = runtime.encoder.encode(texts)
    run = run_encoded(runtime.engine, enc, token_budget)
    return Scored(run.outputs, run.errors, enc.truncated, run.stats)
