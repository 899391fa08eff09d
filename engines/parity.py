"""Parity of a compiled artifact against the transformers reference on probe inputs."""
from __future__ import annotations

import numpy as np
import torch

from engines import probes

# fp32 tolerances (issue #2): logits max |diff|, embeddings min cosine.
LOGITS_ATOL = {"fp32": 1e-4}
EMBEDDING_MIN_COSINE = {"fp32": 0.9999}
# Quantized artifacts (issue #7) are judged on what a job writes: the label and the score.
LABEL_AGREEMENT = {"int8": 0.99}
SCORE_P99 = {"int8": 0.02}
MIN_SCORE_ROWS = 200  # fewer rows and one flipped label moves the agreement by more than 0.5%


def probe_batches(tokenizer, task: str, max_seq_len: int) -> list[dict[str, np.ndarray]]:
    """Probe inputs in several batch sizes, each padded to its own longest row."""
    if task == "pair-classification":
        rows = probes.pairs()
        encode = lambda chunk: tokenizer([a for a, _ in chunk], [b for _, b in chunk], padding=True,
                                         truncation="longest_first", max_length=max_seq_len, return_tensors="np")
    else:
        rows = list(probes.TEXTS)
        encode = lambda chunk: tokenizer(chunk, padding=True, truncation=True, max_length=max_seq_len,
                                         return_tensors="np")
    batches = []
    for size in (1, 3, len(rows)):
        for start in range(0, len(rows), size):
            enc = encode(rows[start:start + size])
            batches.append({k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")})
            if size == 1 and start >= 2:
                break
    return batches


def check(module: torch.nn.Module, engine, tokenizer, task: str, precision: str, max_seq_len: int) -> dict:
    """Compare engine and reference on every probe batch; return the manifest's parity record."""
    batches = probe_batches(tokenizer, task, max_seq_len)
    worst_diff, worst_cos, rows = 0.0, 1.0, 0
    for feed in batches:
        with torch.no_grad():
            ref = module(*(torch.from_numpy(feed[k]) for k in ("input_ids", "attention_mask", "token_type_ids"))).numpy()
        got = np.asarray(engine.infer(feed), dtype=np.float64)
        ref = ref.astype(np.float64)
        if got.shape != ref.shape:
            raise ValueError(f"engine output shape {got.shape} != reference {ref.shape}")
        worst_diff = max(worst_diff, float(np.abs(got - ref).max()))
        cos = (got * ref).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1) + 1e-12)
        worst_cos = min(worst_cos, float(cos.min()))
        rows += len(ref)
    record = {"reference": "transformers", "max_abs_diff": worst_diff, "min_cosine": worst_cos,
              "probe_rows": rows, "precision": precision}
    if task == "embedding":
        record["tolerance"] = {"min_cosine": EMBEDDING_MIN_COSINE.get(precision, 0.999)}
        record["passed"] = worst_cos >= record["tolerance"]["min_cosine"]
    else:
        record["tolerance"] = {"max_abs_diff": LOGITS_ATOL.get(precision, 1e-2)}
        record["passed"] = worst_diff <= record["tolerance"]["max_abs_diff"]
    return record


def _batched(fn, items: list, batch: int = 32) -> np.ndarray:
    return np.concatenate([fn(items[i:i + batch]) for i in range(0, len(items), batch)])


def _outputs(module, engine, tokenizer, texts: list, max_seq_len: int, pairs: bool) -> tuple[np.ndarray, np.ndarray]:
    """Reference and engine outputs for texts (or (left, right) tuples for a cross-encoder)."""

    def encode(chunk):
        if pairs:
            enc = tokenizer([a for a, _ in chunk], [b for _, b in chunk], padding=True, truncation="longest_first",
                            max_length=max_seq_len, return_tensors="np")
        else:
            enc = tokenizer(chunk, padding=True, truncation=True, max_length=max_seq_len, return_tensors="np")
        return {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}

    def ref(chunk):
        feed = encode(chunk)
        with torch.no_grad():
            return module(*(torch.from_numpy(feed[k]) for k in ("input_ids", "attention_mask", "token_type_ids"))).numpy()

    def got(chunk):
        return np.asarray(engine.infer(encode(chunk)))

    # Batches of similar length: far less padding, and the reference is the slow side.
    order = sorted(range(len(texts)), key=lambda i: len(texts[i][0]) + len(texts[i][1]) if pairs else len(texts[i]))
    ranked = [texts[i] for i in order]
    ref_out, got_out = _batched(ref, ranked), _batched(got, ranked)
    back = np.argsort(order)
    return ref_out[back].astype(np.float64), got_out[back].astype(np.float64)


def _probabilities(logits: np.ndarray) -> np.ndarray:
    if logits.shape[1] == 1:
        p = 1.0 / (1.0 + np.exp(-logits))
        return np.concatenate([1.0 - p, p], axis=1)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def score_check(module, engine, tokenizer, task: str, precision: str, max_seq_len: int, *, threshold: float = 0.5,
                positive_label: int | None = None, rows: list | None = None) -> dict:
    """Label agreement and p99 |score diff| between engine and reference on scored rows.

    A row is what a job scores: a (left, right) pair for `embedding` (score: the cosine of the
    two sides) and `pair-classification` (score: P(positive)), a text for `text-classification`
    (label: the top class; score diff: the largest change of any class probability). Labels of
    pair tasks are `score >= threshold`. `rows` defaults to `probes.scored_rows(task)`.
    """
    rows = list(rows if rows is not None else probes.scored_rows(task))
    if len(rows) < MIN_SCORE_ROWS:
        raise ValueError(f"a {precision} parity check needs at least {MIN_SCORE_ROWS} rows, got {len(rows)}")
    if task == "embedding":
        texts = list(dict.fromkeys([t for pair in rows for t in pair]))
        where = {t: i for i, t in enumerate(texts)}
        ref, got = _outputs(module, engine, tokenizer, texts, max_seq_len, pairs=False)
        li = np.array([where[a] for a, _ in rows])
        ri = np.array([where[b] for _, b in rows])

        def cosine(e):
            e = e / np.linalg.norm(e, axis=1, keepdims=True)
            return (e[li] * e[ri]).sum(1)

        s_ref, s_got = cosine(ref), cosine(got)
        same = (s_ref >= threshold) == (s_got >= threshold)
        diff = np.abs(s_got - s_ref)
    else:
        ref, got = _outputs(module, engine, tokenizer, rows, max_seq_len, pairs=task == "pair-classification")
        p_ref, p_got = _probabilities(ref), _probabilities(got)
        if task == "pair-classification":
            pos = p_ref.shape[1] - 1 if positive_label is None else positive_label
            same = (p_ref[:, pos] >= threshold) == (p_got[:, pos] >= threshold)
            diff = np.abs(p_got[:, pos] - p_ref[:, pos])
        else:
            same = p_ref.argmax(1) == p_got.argmax(1)
            diff = np.abs(p_got - p_ref).max(axis=1)
    record = {"score_rows": len(rows), "label_agreement": float(same.mean()),
              "p99_score_diff": float(np.percentile(diff, 99)), "max_score_diff": float(diff.max())}
    record["score_tolerance"] = {"label_agreement": LABEL_AGREEMENT[precision], "p99_score_diff": SCORE_P99[precision]}
    record["passed"] = (record["label_agreement"] >= LABEL_AGREEMENT[precision]
                        and record["p99_score_diff"] <= SCORE_P99[precision])
    return record


def check_quantized(module, engine, tokenizer, task: str, precision: str, max_seq_len: int, **kw) -> dict:
    """The parity record of a quantized artifact: the probe diffs for information, gated on scores."""
    record = check(module, engine, tokenizer, task, precision, max_seq_len)
    record.pop("tolerance", None)
    record.update(score_check(module, engine, tokenizer, task, precision, max_seq_len, **kw))
    return record
