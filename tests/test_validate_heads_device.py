import numpy as np
import pandas as pd
import pytest

from engines.base import Device
from udfs import heads
from udfs.device import bind_device, parse_device
from udfs.validate import first_problem, id_problems, text_problems


def test_text_problems_classify_null_blank_and_invisible():
    s = pd.Series(["ok", None, "", "  \t\n", "\x00\x07", "\u200b\ufeff", "日本"])
    out = text_problems(s, "query")
    assert out[0] is None and out[6] is None
    assert out[1].startswith("null_text")
    assert all(out[i].startswith("blank_text") for i in (2, 3, 4, 5))


def test_id_problems_and_precedence():
    ids = pd.Series(["a", None, "b"])
    counts = pd.Series([None, None, 3.0])
    out = id_problems(ids, counts, "pair_id")
    assert out[0] is None and out[1].startswith("null_id") and out[2] == "duplicate_id: pair_id appears 3 times in the input"
    texts = text_problems(pd.Series([None, None, "x"]), "left side")
    merged = first_problem(out, texts)
    assert merged[0].startswith("null_text") and merged[1].startswith("null_id") and merged[2].startswith("duplicate_id")


def test_positive_probability_softmax_and_sigmoid():
    logits = np.array([[0.0, 0.0], [0.0, np.log(3.0)]])
    assert heads.positive_probability(logits, 1).tolist() == pytest.approx([0.5, 0.75])
    assert heads.positive_probability(np.array([[0.0], [np.log(3.0)]]), 0).tolist() == pytest.approx([0.5, 0.75])


def test_top_k_is_clamped_to_label_count_and_sorted():
    order, probs = heads.top_k(np.array([[1.0, 3.0, 2.0]]), ("a", "b", "c"), k=10)
    assert order.tolist() == [[1, 2, 0]]
    assert probs.sum() == pytest.approx(1.0) and (np.diff(probs[0]) <= 0).all()


def test_cosine_of_normalised_rows():
    a = np.array([[1.0, 0.0], [0.6, 0.8]])
    b = np.array([[1.0, 0.0], [0.8, -0.6]])
    assert heads.cosine(a, b).tolist() == pytest.approx([1.0, 0.0])


def test_device_binding_order():
    res = {"gpu": ["3"], "neuroncore": ["5"]}
    assert bind_device("tensorrt", "cuda:0", res) == Device("cuda", "3")
    assert bind_device("neuronx", None, res) == Device("neuron", "5")
    assert bind_device("tensorrt", "cuda:1", {}) == Device("cuda", "1")
    assert bind_device("onnx", None, res) == Device()
    with pytest.raises(ValueError, match="--device must be"):
        parse_device("tpu:0")


def test_blank_check_agrees_with_deleting_the_invisible_characters_on_every_code_point():
    """The vectorised check (search for one visible character) against the definition (nothing
    is left once whitespace, control and invisible characters are deleted), for each code point
    alone and next to a space, a visible letter and a zero-width space."""
    import re

    from udfs.validate import INVISIBLE

    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = chars + [f" {c}\u200b" for c in chars[::97]] + [f"{c}a" for c in chars[::101]]
    blank = np.array([x is not None for x in text_problems(pd.Series(texts, dtype=object), "t")])
    invisible = re.compile(f"[{INVISIBLE}]+")
    assert blank.tolist() == [invisible.sub("", t) == "" for t in texts]
    assert 40 < blank[: len(chars)].sum() < 400  # the set is the small one it claims to be
