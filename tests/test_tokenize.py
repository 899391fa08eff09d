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
