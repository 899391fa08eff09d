"""Parity of a compiled artifact against the transformers reference on probe inputs."""
from __future__ import annotations

import numpy as np
import torch

from engines import probes

# fp32 tolerances (issue #2): logits max |diff|, embeddings min cosine.
LOGITS_ATOL = {"fp32": 1e-4}
EMBEDDING_MIN_COSINE = {"fp32": 0.9999}


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
