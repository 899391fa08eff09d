"""A faster encoder for the single texts it is known to encode exactly as the artifact's tokenizer.

flash-tokenizer (`flash_tokenizer`, optional) encodes BERT WordPiece several times faster per
CPU-second than `tokenizers`, but not identically on all input: it differs on combining marks,
Hangul, fullwidth and format characters, private-use code points, some Latin-1 punctuation and
literal special tokens such as `[CLS]`, and it takes the call's max_length as its per-word
limit (in UTF-8 bytes) where WordPiece uses `max_input_chars_per_word` (in characters). So it
gets only the texts where none of that can arise: every character in `SAFE_CHARACTERS`, no added
token's content (in any case), and no run of non-whitespace long enough, in bytes, to meet either
per-word limit. Everything else, and every pair, stays with the artifact's tokenizer
(udfs/tokenize.py).

It is used only when the tokenizer.json is the BERT WordPiece it implements (`refusal`) and
when a probe of deterministic texts (truncation and long words included) encodes exactly
as the artifact's tokenizer does (`probe_texts`). ACCEL_SCORING_FAST_TOKENIZER=0 turns it off.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import itertools
import os
import random
import re
from pathlib import Path
from typing import Callable

import numpy as np

from engines.store import CACHE_ENV, DEFAULT_CACHE_DIR

ENV = "ACCEL_SCORING_FAST_TOKENIZER"
# The release SAFE_CHARACTERS and the per-word limits were checked against (pyproject's `fast`
# extra pins it); another is refused, since its differences from WordPiece are unknown.
FLASH_VERSION = "1.2.0"
# Texts per flash-tokenizer call. It holds the GIL while it encodes (tokenizers releases it), so
# with --overlap a call this size (a few milliseconds) is as long as it stalls the engine's thread.
GIL_CHUNK = 256
# WordPiece's per-word limit this route was checked against; a different one is refused.
MAX_INPUT_CHARS_PER_WORD = 100
# The word breaks a word's length is measured between. Any other character, a dropped control
# character or a non-ASCII space, counts as part of the word: that can only overstate its length.
ASCII_WORD_BREAKS = " \t\n\r"
# Characters flash-tokenizer 1.2.0 encodes as `tokenizers` does, alone, repeated, inside and
# between words, in both cases, and in words up to the per-word limit (tests/test_fast_tokenizer.py
# checks each): ASCII, Latin-1 (not its C1 controls) and Latin Extended-A/B but for the punctuation
# it splits differently (¡ § « soft hyphen ¶ » ¿) and the two whose lowercase is longer (İ ǰ),
# and the typographic marks of product text. A route takes only those of them its vocab holds
# (`known_characters`): cut at max_length, flash-tokenizer keeps the first pieces of a word that
# WordPiece makes one [UNK].
SAFE_CHARACTERS = frozenset(
    {chr(c) for c in (*range(0x80), *range(0xA0, 0x250))} - set("¡§«\u00ad¶»¿İǰ") | set("‐‑‒–—―‘’‚‛“”„‟†‡•…‰′″‹›€™№℃←→↑↓−∞≤≥"))


def refusal(config: dict) -> str | None:
    """Why flash-tokenizer cannot stand in for this tokenizer.json, or None when it can."""
    normalizer, pre, model = config.get("normalizer") or {}, config.get("pre_tokenizer") or {}, config.get("model") or {}
    post = config.get("post_processor") or {}
    if model.get("type") != "WordPiece":
        return f"model is {model.get('type')}, not WordPiece"
    if normalizer.get("type") != "BertNormalizer":
        return f"normalizer is {normalizer.get('type')}, not BertNormalizer"
    if not normalizer.get("clean_text", True):
        return "BertNormalizer without clean_text"
    if normalizer.get("strip_accents") not in (None, normalizer.get("lowercase")):
        return "BertNormalizer strips accents without lowercasing, or lowercases keeping accents"
    if pre.get("type") != "BertPreTokenizer":
        return f"pre-tokenizer is {pre.get('type')}, not BertPreTokenizer"
    if post.get("type") not in ("BertProcessing", "TemplateProcessing"):
        return f"post-processor is {post.get('type')}"
    if any(t.get("normalized") for t in config.get("added_tokens", [])):
        return "an added token is matched after normalizing"
    if model.get("max_input_chars_per_word") != MAX_INPUT_CHARS_PER_WORD:
        return f"max_input_chars_per_word is {model.get('max_input_chars_per_word')}, not {MAX_INPUT_CHARS_PER_WORD}"
    if model.get("continuing_subword_prefix") != "##":
        return "continuing subword prefix is not ##"
    vocab = model.get("vocab") or {}
    if sorted(vocab.values()) != list(range(len(vocab))) or any("\n" in t or "\r" in t for t in vocab):
        return "vocab ids are not 0..n-1 or a token holds a line break (no vocab.txt can say it)"
    return None


def vocab_file(config: dict) -> Path:
    """tokenizer.json's vocab as the vocab.txt flash-tokenizer reads (one token per line, line
    number = id), written once per vocab under the worker's cache folder."""
    vocab = config["model"]["vocab"]
    text = "".join(t + "\n" for t, _ in sorted(vocab.items(), key=lambda kv: kv[1]))
    folder = Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR) / "vocab"
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()}.txt"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)  # workers writing at once each replace it with the same text
    return path


class FlashRoute:
    """flash-tokenizer for the single texts `takes` accepts (udfs/tokenize.py routes them)."""

    def __init__(self, config: dict, max_seq_len: int, characters: frozenset[str]):
        from flash_tokenizer._core import FlashBertTokenizer

        normalizer = config["normalizer"]
        self.max_seq_len = max_seq_len
        self._tok = FlashBertTokenizer(str(vocab_file(config)), bool(normalizer.get("lowercase", True)),
                                       max_seq_len + 1, bool(normalizer.get("handle_chinese_chars", True)))
        # Longest word both tokenizers keep whole: WordPiece's limit, and flash-tokenizer's
        # (the call's max_length, max_seq_len + 1 here) with a margin of one.
        self._longest_word = longest_word = min(max_seq_len, MAX_INPUT_CHARS_PER_WORD + 1) - 2
        # Only from a word's start (the lookbehind): linear in the text, not in text x limit.
        self._long_word = re.compile(f"(?<![^{ASCII_WORD_BREAKS}])[^{ASCII_WORD_BREAKS}]{{{longest_word + 1}}}".encode())
        self._characters = characters
        self._ascii = characters.issuperset(map(chr, range(128)))
        self._foreign = re.compile(f"[^{''.join(map(re.escape, sorted(characters)))}]")
        # WordPiece matches these in the raw text (`refusal`: none after normalizing); any case here.
        added = sorted({t["content"] for t in config.get("added_tokens", [])})
        self._added = re.compile("|".join(map(re.escape, added)), re.IGNORECASE) if added else None

    def accepts(self, texts: list[str]) -> np.ndarray:
        """`takes` of each text; one look at the whole batch when that shows it takes them all."""
        joined = "\n".join(texts)  # a word break: no word spans two texts
        if ((self._ascii and joined.isascii()) or not self._foreign.search(joined)) and \
                _longest_word_bytes(joined.encode()) <= self._longest_word and not (self._added and self._added.search(joined)):
            return np.ones(len(texts), dtype=bool)
        return np.fromiter(map(self.takes, texts), dtype=bool, count=len(texts))

    def takes(self, text: str) -> bool:
        if not ((self._ascii and text.isascii()) or not self._foreign.search(text)) or \
                self._long_word.search(text.encode()):
            return False
        return not (self._added and self._added.search(text))

    def encode_all(self, texts: list[str]) -> tuple[list[np.ndarray], np.ndarray]:
        """ids and truncation of `texts`, all of which `takes` accepts. Serial (parallel=False):
        the task's CPU share is the tokenizer's, as for `tokenizers` (RAYON_NUM_THREADS, udfs/runtime.py).
        Encoded at max_seq_len + 1, a row longer than max_seq_len lost tokens: it keeps [CLS],
        its first max_seq_len - 2 tokens and [SEP], as WordPiece's truncation does."""
        cut = self.max_seq_len - 1
        rows = itertools.chain.from_iterable(
            self._tok.batch_encode(texts[i:i + GIL_CHUNK], "longest", self.max_seq_len + 1, False)
            for i in range(0, len(texts), GIL_CHUNK))
        ids, truncated = [], np.zeros(len(texts), dtype=bool)
        for i, row in enumerate(rows):
            if len(row) > self.max_seq_len:
                row, truncated[i] = row[:cut] + row[-1:], True
            ids.append(np.asarray(row, dtype=np.int64))
        return ids, truncated


def _longest_word_bytes(data: bytes) -> int:
    """The longest run of bytes between ASCII_WORD_BREAKS: `takes`'s long-word test for a whole
    batch at once (a regex costs as much per byte as flash-tokenizer's encoding)."""
    codes = np.frombuffer(data, dtype=np.uint8)
    breaks = np.zeros(len(codes), dtype=bool)
    for b in ASCII_WORD_BREAKS.encode():
        breaks |= codes == b
    return int(np.diff(np.flatnonzero(breaks), prepend=-1, append=len(codes)).max()) - 1


def load(config: dict, max_seq_len: int, reference: Callable[[list[str]], tuple[list, np.ndarray]]
         ) -> tuple[FlashRoute | None, str]:
    """The route for this tokenizer.json, or None; and, for the worker's log, why (not).
    `reference(texts)` is the artifact tokenizer's ids and truncation, what the probe must match."""
    if os.environ.get(ENV, "1") == "0":
        return None, f"off ({ENV}=0)"
    try:
        import flash_tokenizer  # noqa: F401  (optional dependency)
    except ImportError as e:
        return None, f"flash_tokenizer not importable ({e})"
    installed = importlib.metadata.version("flash_tokenizer")
    if installed != FLASH_VERSION:
        return None, f"not used: flash_tokenizer {installed} is installed; this route was checked on {FLASH_VERSION} only"
    why = refusal(config)
    if why:
        return None, f"not used: {why}"
    try:
        route = FlashRoute(config, max_seq_len, known_characters(config, reference))
    except Exception as e:  # an unwritable cache folder, a vocab it cannot read: tokenizers alone
        return None, f"not used: {type(e).__name__}: {e}"
    texts = [t for t in probe_texts(max_seq_len) if route.takes(t)]
    ids, truncated = route.encode_all(texts)
    want_ids, want_truncated = reference(texts)
    bad = [t for t, a, b in zip(texts, ids, want_ids) if a.tolist() != list(b)]
    if bad or (truncated != want_truncated).any():
        example = repr((bad or [t for t, x, y in zip(texts, truncated, want_truncated) if x != y])[0][:60])
        return None, f"not used: its probe differs from the tokenizer's on {len(bad)} of {len(texts)} texts, e.g. {example}"
    return route, f"flash_tokenizer for single texts of Latin script (probe: {len(texts)} texts identical)"


def known_characters(config: dict, reference: Callable[[list[str]], tuple[list, np.ndarray]]) -> frozenset[str]:
    """The SAFE_CHARACTERS that never make a word [UNK] with this vocab: alone, and inside a word."""
    chars = sorted(SAFE_CHARACTERS)
    ids, _ = reference([form for c in chars for form in (c, f"x{c}x")])
    unk = config["model"]["vocab"].get(config["model"].get("unk_token"))
    return frozenset(c for c, alone, inside in zip(chars, ids[::2], ids[1::2]) if unk not in alone and unk not in inside)


def probe_texts(max_seq_len: int, n: int = 300, seed: int = 0) -> list[str]:
    """Deterministic texts the route must encode as the artifact's tokenizer does: words, digits,
    punctuation and brackets, accented Latin and typographic marks, control characters and
    whitespace variants, words at and past the longest the route takes, and texts around the
    truncation length."""
    rng = random.Random(seed)
    words = ("usb-c charger 65w gan 3-port (2c+1a) black/grey #hx-9000 Stainless STEEL pack of 2 "
             "5'11\" 1/2-inch $19.99 12,345.67 e-mail x@y.com [2 pack] {set} <b> a_b ~ ` | \\ ^ "
             "unbelievably reconfigurable tokenization WiFi iPhone15 ProMax 256GB !!! ??? ... café CRÈME "
             "brûlée naïve Ångström Łódź ŠKODA ß 25°C ±5% ½ © ® ™ • – — “quoted” ‘it’s’ €19,99 £5 ¥ …").split()
    odd = ["\x00", "\x07", "\x0b", "\x0c", "\x1b", "\x1f", "\x7f", "\t", "\n", "\r\n", "  "]
    longest = min(max_seq_len, MAX_INPUT_CHARS_PER_WORD + 1) - 2
    texts = ["", " ", "\t\n", "[cls] [sep]", "[CLS] x", "[2 Pack] USB", "a" * longest, "a" * (longest + 1),
             ("ab" * longest)[:longest - 1] + "!", "x" * 150]
    for n_words in range(max(1, max_seq_len - 6), max_seq_len + 4):
        texts.append(" ".join(["word"] * n_words))  # one token a word: [CLS]+n+[SEP] around max_seq_len
    while len(texts) < n:
        parts = []
        for _ in range(rng.randint(1, 2 * max_seq_len // 3)):
            parts.append(rng.choice(odd) if rng.random() < 0.08 else rng.choice(words))
        if rng.random() < 0.3:  # a word at or just under the longest taken whole
            parts.insert(rng.randrange(len(parts) + 1), "".join(
                rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(rng.randint(longest - 20, longest))))
        texts.append(rng.choice((" ", " ", " ", "", "-", " , ")).join(parts))
    return texts
