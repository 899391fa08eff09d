"""Fast-tokenizer batch encoding with pair-aware truncation and no padding.

Padding is the batcher's job: it pads each device batch to that batch's longest row (or to a
compiled bucket), which is where most of the speed over fixed-size padding comes from.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

# A kept token needs at least one character, so clipping a text to this many characters per
# token of budget never changes the kept tokens of ordinary text, and bounds the cost of a
# 100k-character field.
CHARS_PER_TOKEN = 32
# How a row longer than max_seq_len loses tokens: part of what a cached result depends on (udfs/units.py).
TRUNCATION = "longest_first"


@dataclasses.dataclass
class Encoded:
    """Token ids of N rows, unpadded, plus whether each row lost tokens to truncation."""

    ids: list[np.ndarray]
    type_ids: list[np.ndarray]
    truncated: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return np.fromiter((len(x) for x in self.ids), dtype=np.int64, count=len(self.ids))


class TextEncoder:
    """Wraps a `tokenizers.Tokenizer` loaded once per worker from the artifact's tokenizer.json."""

    def __init__(self, tokenizer_json: str | Path, max_seq_len: int):
        from tokenizers import Tokenizer

        self.max_seq_len = int(max_seq_len)
        self._tok = Tokenizer.from_file(str(tokenizer_json))
        self._tok.no_padding()
        self._tok.enable_truncation(self.max_seq_len, strategy=TRUNCATION)
        self.max_chars = self.max_seq_len * CHARS_PER_TOKEN

    def _clip(self, texts: list[str]) -> tuple[list[str], np.ndarray]:
        clipped = np.fromiter((len(t) > self.max_chars for t in texts), dtype=bool, count=len(texts))
        if clipped.any():
            texts = [t[: self.max_chars] if c else t for t, c in zip(texts, clipped)]
        return texts, clipped

    def encode(self, texts: list[str]) -> Encoded:
        texts, clipped = self._clip(texts)
        return self._pack(self._tok.encode_batch(texts), clipped)

    def encode_pairs(self, left: list[str], right: list[str]) -> Encoded:
        left, clipped_l = self._clip(left)
        right, clipped_r = self._clip(right)
        return self._pack(self._tok.encode_batch(list(zip(left, right))), clipped_l | clipped_r)

    @staticmethod
    def _pack(encodings, clipped: np.ndarray) -> Encoded:
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        type_ids = [np.asarray(e.type_ids, dtype=np.int64) for e in encodings]
        overflow = np.fromiter((len(e.overflowing) > 0 for e in encodings), dtype=bool, count=len(encodings))
        return Encoded(ids, type_ids, overflow | clipped)
