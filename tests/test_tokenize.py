import random

import numpy as np
import pytest

from udfs.tokenize import CHARS_PER_TOKEN, TextEncoder

WORDS = "apple iphone pro max 256gb titanium case charger usb-c 65w samsung galaxy ultra 日本 包丁 🌟 שואב café".split()


@pytest.fixture(scope="module")
def hf_tokenizer(minilm_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_dir)


@pytest.fixture(scope="module")
def encoder(minilm_dir):
    return TextEncoder(minilm_dir / "tokenizer.json", max_seq_len=32)


def _text(rng, lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def test_pairs_match_transformers_longest_first(encoder, hf_tokenizer):
    rng = random.Random(0)
    left = [_text(rng, 1, 40) for _ in range(200)]
    right = [_text(rng, 1, 40) for _ in range(200)]
    enc = encoder.encode_pairs(left, right)
    ref = hf_tokenizer(left, right, truncation="longest_first", max_length=32)
    full = hf_tokenizer(left, right)
    for i in range(200):
        assert enc.ids[i].tolist() == ref["input_ids"][i]
        assert enc.type_ids[i].tolist() == ref["token_type_ids"][i]
        assert enc.truncated[i] == (len(full["input_ids"][i]) > 32)
    assert enc.truncated.any() and not enc.truncated.all()


def test_single_texts_match_transformers(encoder, hf_tokenizer):
    rng = random.Random(1)
    texts = [_text(rng, 1, 50) for _ in range(100)]
    enc = encoder.encode(texts)
    ref = hf_tokenizer(texts, truncation=True, max_length=32)
    assert [x.tolist() for x in enc.ids] == ref["input_ids"]
    assert (enc.lengths <= 32).all()


def test_huge_text_is_clipped_before_tokenizing_and_marked_truncated(encoder):
    huge = "word " * 20_000  # 100k characters
    enc = encoder.encode_pairs([huge, "short"], ["tiny", "short"])
    assert enc.truncated.tolist() == [True, False]
    assert len(enc.ids[0]) == 32
    assert encoder.max_chars == 32 * CHARS_PER_TOKEN


def test_odd_unicode_and_control_characters_encode(encoder):
    texts = ["emoji 🌟🎉 title", "中文标题 测试", "עברית ימין לשמאל", "ctrl\x00\x07\x1b chars", "\u200b\u200b"]
    enc = encoder.encode(texts)
    assert all(ids[0] == 101 and ids[-1] == 102 for ids in enc.ids)
    assert len(enc.ids[4]) == 2  # only [CLS] [SEP]: invisible characters carry no tokens


def _unicode_corpus(n: int, seed: int) -> list[str]:
    """Generator offers and queries mixed with the edge cases a WordPiece tokenizer trips on:
    accents (composed and combining), CJK, emoji sequences, RTL, control and invisible
    characters, odd whitespace, words over the 100-character limit, texts long enough to truncate."""
    from bench.synthetic import datasets
    from udfs.tokenize import FAST_PROBES
    from udfs.workloads import Duplicates

    pairs = datasets.product_pairs(n // 4, seed=seed)
    texts = Duplicates().side(pairs, "left").tolist() + datasets.search_queries(n // 4, seed=seed)["query"].tolist()
    rng = random.Random(seed)
    odd = [*FAST_PROBES, "Ünïcödé", "e\u0301", "\u00e9", "ｈｅｌｌｏ", "👍🏽", "🏳️‍🌈", "\U0001F600" * 40, "\x01\x02",
           "\u0627\u0644\u0639", "\u0915\u094d\u0937", "ﷺ", "İstanbul", "ß" * 101, "x" * 101, "\t\v\f", "\u2063"]
    for i in range(n // 2):
        words = [rng.choice(odd) if rng.random() < 0.3 else rng.choice(WORDS) for _ in range(rng.randint(0, 60))]
        texts.append(" ".join(words) if i % 3 else "".join(words))
    return texts


def test_fast_path_gives_the_same_ids_type_ids_and_truncation_on_a_large_unicode_corpus(minilm_dir):
    from tokenizers import Tokenizer

    from udfs.tokenize import same_encoding

    tok = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(32, strategy="longest_first")
    texts = _unicode_corpus(20_000, seed=3)
    # A truncated pair's overflow grows with the product of its sides' lengths: fewer pairs.
    pairs = list(zip(texts[:4000], texts[-4000:]))
    for batch in (texts, pairs):
        slow, fast = tok.encode_batch(batch), tok.encode_batch_fast(batch)
        assert len(slow) == len(fast) == len(batch)
        assert all(same_encoding(a, b) for a, b in zip(slow, fast))
        assert any(a.overflowing for a in slow) and not all(a.overflowing for a in slow)  # truncation exercised
    assert TextEncoder(minilm_dir / "tokenizer.json", 32).method == "encode_batch_fast"


def test_encoder_falls_back_to_encode_batch_when_the_fast_path_disagrees(minilm_dir, monkeypatch):
    from tokenizers import Tokenizer

    from udfs import tokenize

    real = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    real.no_padding()

    class Drifting:  # a tokenizer whose offset-free path loses the last token of every text
        def __init__(self):
            self.encode_batch = real.encode_batch

        def encode_batch_fast(self, batch):
            out = real.encode_batch(batch)
            for e in out:
                e.truncate(max(len(e.ids) - 1, 1))
            return out

    assert tokenize.fast_path_agrees(real) is True
    assert tokenize.fast_path_agrees(Drifting()) is False
    assert tokenize.fast_path_agrees(object()) is False  # tokenizers < 0.20: no encode_batch_fast
    monkeypatch.setattr(tokenize, "fast_path_agrees", lambda tok: False)
    enc = TextEncoder(minilm_dir / "tokenizer.json", 32)
    assert enc.method == "encode_batch"
    assert enc.encode(["café"]).ids[0].tolist() == real.encode("café").ids


def test_repeated_inputs_are_tokenized_once_and_fanned_out_unchanged(encoder, minilm_dir):
    from tokenizers import Tokenizer

    rng = random.Random(5)
    pool = [_text(rng, 1, 45) for _ in range(30)]
    texts = [rng.choice(pool) for _ in range(300)]
    single_calls, pair_calls = [], []
    singles, batch = encoder._encode_singles, encoder._encode_batch  # singles may go to flash-tokenizer
    encoder._encode_singles = lambda items, clipped: single_calls.append(len(items)) or singles(items, clipped)
    try:
        enc = encoder.encode(texts)
        encoder._encode_batch = lambda items: pair_calls.append(len(items)) or batch(items)
        pairs = encoder.encode_pairs(texts, texts[::-1])
    finally:
        del encoder._encode_singles  # the method again
        encoder._encode_batch = batch
    assert single_calls == [len(set(texts))] and pair_calls == [len(set(zip(texts, texts[::-1])))]
    ref = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    ref.no_padding()
    ref.enable_truncation(32, strategy="longest_first")
    one_by_one = ref.encode_batch(texts)
    assert [x.tolist() for x in enc.ids] == [e.ids for e in one_by_one]
    assert enc.truncated.tolist() == [bool(e.overflowing) for e in one_by_one]
    pair_ref = ref.encode_batch(list(zip(texts, texts[::-1])))
    assert [x.tolist() for x in pairs.type_ids] == [e.type_ids for e in pair_ref]
    assert pairs.truncated.tolist() == [bool(e.overflowing) for e in pair_ref]
