"""Model outputs -> scores: softmax/sigmoid for classifiers, cosine for bi-encoders, top-k."""
from __future__ import annotations

import numpy as np


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - np.nanmax(logits, axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def positive_probability(logits: np.ndarray, positive_label: int) -> np.ndarray:
    """P(positive class): sigmoid for a single logit, softmax column otherwise."""
    if logits.shape[1] == 1:
        return 1.0 / (1.0 + np.exp(-logits[:, 0]))
    return softmax(logits)[:, positive_label]


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine; the graph already L2-normalises, this guards against drift."""
    num = (a * b).sum(axis=1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(num / den, -1.0, 1.0)


def top_k(logits: np.ndarray, labels: tuple[str, ...], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices [n, k] of the k most probable labels (ties broken by label index) and their probabilities."""
    probs = softmax(logits)
    k = min(k, probs.shape[1])
    order = np.argsort(-probs, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(probs, order, axis=1)
