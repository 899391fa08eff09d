"""Fast-tokenizer batch encoding with pair-aware truncation and no padding.

Padding is the batcher's job: it pads each device batch to that batch's longest row (or to a
compiled bucket), which is where most of the speed over fixed-size padding comes from.

On an accelerator the tokenizer sets the job's speed (docs/performance.md, host ceiling), so
two things keep its work down without changing a token: each distinct input of a call is
tokenized once, and `encode_batch_fast` (tokenizers >= 0.20: no character offsets, which
nothing here reads) is used when it gives exactly `encode_batch`'s ids, type ids and
truncation on a probe corpus of this very tokenizer (`FAST_PROBES`), else `encode_batch`.
Single texts that flash-tokenizer is known to encode identically go to it instead, when it is
installed and passes its own probe (udfs/flash_route.py).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from udfs import flash_route, progress

# A kept token needs at least one character, so clipping a text to this many characters per
# token of budget never changes the kept tokens of ordinary text, and bounds the cost of a
# 100k-character field.
CHARS_PER_TOKEN = 32
# How a row longer than max_seq_len loses tokens: part of what a cached result depends on (udfs/scoring_units.py).
TRUNCATION = "longest_first"

# What could make the offset-free path differ, if anything does: accents and case folding,
# CJK (split per character), emoji and other astral characters, right-to-left scripts,
# combining marks, control and invisible characters, whitespace variants, a word longer than
# WordPiece's 100-character limit ([UNK]), punctuation runs, and texts long enough to truncate.
FAST_PROBES = (
    "Café naïve résumé Ångström ÉCOLE Straße ǅemal", "東京都 北京市 서울 日本語のテキスト 包丁 ㈱",
    "emoji 🌟🎉👩‍👩‍👧‍👦 🇩🇪 flags 😀😃", "עברית ימין לשמאל العربية", "e\u0301 a\u0308 n\u0303 combining",
    "ctrl\x00\x07\x1b\x7f\x9f chars", "zero\u200bwidth\u200d joiner\ufeff bom \u00ad soft",
    "tabs\tand\nnewlines\r\n\u2028\u2029 \u3000 ideographic space \xa0 nbsp",
    "a" * 150 + " " + "b" * 99 + " " + "ü" * 120, "!!!???... --- ((( ))) $$$ 12,345.67 5'11\" 1/2-inch",
    "USB-C 65W GaN Charger, 3-Port (2C+1A) – Black/Grey #HX-9000", " ".join(["long"] * 300),
    "Ⅻ ½ ℃ ﬁ ﬂ ＡＢＣ ｶﾀｶﾅ", "", " ",
)


@dataclasses.dataclass
class Encoded:
    """Token ids of N rows, unpadded, plus whether each row lost tokens to truncation."""

    ids: list[np.ndarray]
    type_ids: list[np.ndarray]
    truncated: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return np.fromiter(map(len, self.ids), dtype=np.int64, count=len(self.ids))


class TextEncoder:
    """Wraps a `tokenizers.Tokenizer` loaded once per worker from the artifact's tokenizer.json."""

    def __init__(self, tokenizer_json: str | Path, max_seq_len: int):
        from tokenizers import Tokenizer

        self.max_seq_len = int(max_seq_len)
        self._tok = Tokenizer.from_file(str(tokenizer_json))
        self._tok.no_padding()
        self._tok.enable_truncation(self.max_seq_len, strategy=TRUNCATION)
        self.max_chars = self.max_seq_len * CHARS_PER_TOKEN
        self.method = "encode_batch_fast" if fast_path_agrees(self._tok) else "encode_batch"
        self._encode_batch = getattr(self._tok, self.method)
        config = json.loads(Path(tokenizer_json).read_text(encoding="utf-8"))
        self._flash, self.single_route = flash_route.load(config, self.max_seq_len, self._reference)
        # Once per worker (the executor's stderr log, or the local driver's): which encoder single texts get, and why.
        progress.say(f"accel-scoring: single texts: {self.single_route}")
        zeros = np.zeros(self.max_seq_len, dtype=np.int64)
        zeros.setflags(write=False)
        self._zeros = zeros  # a flash-encoded row's type ids: a read-only view of this

    def _clip(self, texts: list[str]) -> tuple[list[str], np.ndarray]:
        clipped = np.fromiter((len(t) > self.max_chars for t in texts), dtype=bool, count=len(texts))
        if clipped.any():
            texts = [t[: self.max_chars] if c else t for t, c in zip(texts, clipped)]
        return texts, clipped

    def encode(self, texts: list[str]) -> Encoded:
        return _fan_out(*self._singles(texts))

    def encode_distinct(self, texts: list[str]) -> tuple[Encoded, np.ndarray]:
        """Each distinct text's encoding once, and each text's index among them: what a worker
        sends the engine, so that a text repeated in a batch runs once (udfs/model_outputs.py)."""
        enc, rows = self._singles(texts)
        return enc, _indices(rows, len(enc.ids))

    def _singles(self, texts: list[str]) -> tuple[Encoded, np.ndarray | None]:
        distinct, rows = distinct_positions(texts)
        distinct, clipped = self._clip(distinct)
        return self._encode_singles(distinct, clipped), rows

    def _encode_singles(self, texts: list[str], clipped: np.ndarray) -> Encoded:
        """The texts flash-tokenizer takes in one call to it, the rest in one to `tokenizers`,
        merged back in input order."""
        mine = self._flash.accepts(texts) if self._flash else np.zeros(len(texts), dtype=bool)
        if not mine.any():
            return self._pack(self._encode_batch(texts), clipped)
        here = np.flatnonzero(mine)
        ids, truncated = self._flash.encode_all(texts if len(here) == len(texts) else [texts[i] for i in here])
        flash = Encoded(ids, [self._zeros[: len(x)] for x in ids], truncated | clipped[here])
        if len(here) == len(texts):
            return flash
        rest = np.flatnonzero(~mine)
        other = self._pack(self._encode_batch([texts[i] for i in rest]), clipped[rest])
        return _merge((here, flash), (rest, other), n=len(texts))

    def _reference(self, texts: list[str]) -> tuple[list[list[int]], np.ndarray]:
        """What the flash route's probe must match: this tokenizer's ids and truncation."""
        encodings = self._encode_batch(texts)
        return [e.ids for e in encodings], np.array([bool(e.overflowing) for e in encodings], dtype=bool)

    def encode_pairs(self, left: list[str], right: list[str]) -> Encoded:
        return _fan_out(*self._pairs(left, right))

    def encode_pairs_distinct(self, left: list[str], right: list[str]) -> tuple[Encoded, np.ndarray]:
        """`encode_distinct` for pairs: each distinct (left, right) once, and each pair's index."""
        enc, rows = self._pairs(left, right)
        return enc, _indices(rows, len(enc.ids))

    def _pairs(self, left: list[str], right: list[str]) -> tuple[Encoded, np.ndarray | None]:
        distinct, rows = distinct_positions(list(zip(left, right)))
        dl, clipped_l = self._clip([a for a, _ in distinct])
        dr, clipped_r = self._clip([b for _, b in distinct])
        return self._pack(self._encode_batch(list(zip(dl, dr))), clipped_l | clipped_r), rows

    @staticmethod
    def _pack(encodings, clipped: np.ndarray) -> Encoded:
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        type_ids = [np.asarray(e.type_ids, dtype=np.int64) for e in encodings]
        overflow = np.fromiter((len(e.overflowing) > 0 for e in encodings), dtype=bool, count=len(encodings))
        return Encoded(ids, type_ids, overflow | clipped)


def _fan_out(enc: Encoded, rows: np.ndarray | None) -> Encoded:
    """Every input row's encoding from its distinct input's (rows shares the arrays, read-only)."""
    if rows is None:
        return enc
    return Encoded([enc.ids[i] for i in rows], [enc.type_ids[i] for i in rows], enc.truncated[rows])


def _indices(rows: np.ndarray | None, distinct: int) -> np.ndarray:
    """`distinct_positions`' indices, spelled out where every item was distinct."""
    return np.arange(distinct) if rows is None else rows


def _merge(*parts: tuple[np.ndarray, Encoded], n: int) -> Encoded:
    """One Encoded of n rows from parts that each hold the rows at their positions."""
    ids: list = [None] * n
    type_ids: list = [None] * n
    truncated = np.zeros(n, dtype=bool)
    for positions, enc in parts:
        for k, i in enumerate(positions.tolist()):
            ids[i], type_ids[i] = enc.ids[k], enc.type_ids[k]
        truncated[positions] = enc.truncated
    return Encoded(ids, type_ids, truncated)


def distinct_positions(items: list) -> tuple[list, np.ndarray | None]:
    """Distinct items in first-seen order, and each item's index among them (None: all distinct)."""
    position: dict = {}
    rows = np.fromiter((position.setdefault(x, len(position)) for x in items), dtype=np.int64, count=len(items))
    if len(position) == len(items):
        return items, None
    return list(position), rows


def fast_path_agrees(tok) -> bool:
    """Whether `encode_batch_fast` exists and gives `encode_batch`'s ids, type ids and overflow
    on FAST_PROBES, as single texts and as pairs."""
    if not hasattr(tok, "encode_batch_fast"):  # tokenizers < 0.20
        return False
    singles = list(FAST_PROBES)
    pairs = list(zip(FAST_PROBES, FAST_PROBES[::-1]))
    for batch in (singles, pairs):
        slow, fast = tok.encode_batch(batch), tok.encode_batch_fast(batch)
        if any(not same_encoding(a, b) for a, b in zip(slow, fast)):
            return False
    return True


def same_encoding(a, b) -> bool:
    """Same ids, type ids and truncation: what the scorer reads of an encoding."""
    return a.ids == b.ids and a.type_ids == b.type_ids and bool(a.overflowing) == bool(b.overflowing)
