"""The reference data generator: deterministic, labelled honestly, with the promised mix."""

import re

import pandas as pd
import pytest

from bench.synthetic.datasets import load_intent_examples, main, product_pairs, search_queries

TEXT_COLUMNS = ["left_title", "left_brand", "left_description", "right_title", "right_brand", "right_description"]
MODEL = r"Model: ([^;\s]+);"  # descriptions state the exact model code when they give one


@pytest.fixture(scope="module")
def pairs() -> pd.DataFrame:
    return product_pairs(4000, seed=7)


@pytest.fixture(scope="module")
def queries() -> pd.DataFrame:
    return search_queries(4000, seed=7)


@pytest.fixture(scope="module")
def examples() -> pd.DataFrame:
    return load_intent_examples()


def _side_texts(pairs: pd.DataFrame) -> pd.Series:
    return pd.concat([pairs[f"{s}_title"] + "\x1f" + pairs[f"{s}_brand"] + "\x1f" + pairs[f"{s}_description"]
                      for s in ("left", "right")], ignore_index=True)


def _words(texts: pd.Series) -> pd.Series:
    return texts.str.split().str.len()


def test_same_seed_gives_the_same_frames():
    pd.testing.assert_frame_equal(product_pairs(300, seed=3), product_pairs(300, seed=3))
    pd.testing.assert_frame_equal(search_queries(300, seed=3), search_queries(300, seed=3))


def test_another_seed_gives_other_frames():
    assert not product_pairs(300, seed=3)[TEXT_COLUMNS].equals(product_pairs(300, seed=4)[TEXT_COLUMNS])
    assert not search_queries(300, seed=3)["query"].equals(search_queries(300, seed=4)["query"])


def test_pair_columns_and_types(pairs):
    assert list(pairs.columns) == ["pair_id", *TEXT_COLUMNS, "label"]
    assert pairs["label"].dtype == bool
    for column in ["pair_id", *TEXT_COLUMNS]:
        assert pairs[column].map(type).eq(str).all(), column


def test_query_columns_and_types(queries):
    assert list(queries.columns) == ["query_id", "query", "intent"]
    for column in queries.columns:
        assert queries[column].map(type).eq(str).all(), column
    assert queries["query"].str.strip().ne("").all()


def test_ids_are_unique(pairs, queries):
    assert pairs["pair_id"].is_unique and pairs["pair_id"].str.fullmatch(r"p\d{9}").all()
    assert queries["query_id"].is_unique and queries["query_id"].str.fullmatch(r"q\d{9}").all()


def test_empty_frames_keep_their_columns():
    assert product_pairs(0).dtypes.to_dict() == product_pairs(5).dtypes.to_dict()
    assert list(search_queries(0).columns) == ["query_id", "query", "intent"]


@pytest.mark.parametrize("fraction", [0.1, 0.4, 0.75])
def test_label_share_is_the_requested_fraction(fraction):
    labels = product_pairs(1000, seed=1, duplicate_fraction=fraction)["label"]
    assert labels.mean() == pytest.approx(fraction, abs=0.005)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="duplicate_fraction"):
        product_pairs(10, duplicate_fraction=1.5)
    with pytest.raises(ValueError, match="n >= 0"):
        search_queries(-1)


def test_model_codes_agree_with_labels(pairs):
    left = pairs["left_description"].str.extract(MODEL)[0]
    right = pairs["right_description"].str.extract(MODEL)[0]
    both = left.notna() & right.notna()
    assert both[pairs["label"]].sum() > 100 and both[~pairs["label"]].sum() > 100
    assert (left == right)[both & pairs["label"]].all()
    assert not (left == right)[both & ~pairs["label"]].any()


def test_negatives_include_hard_and_easy_ones(pairs):
    neg = pairs[~pairs["label"]]
    left_brand, right_brand = neg["left_brand"].str.casefold(), neg["right_brand"].str.casefold()
    same_brand = (left_brand == right_brand) & left_brand.ne("")
    left = neg["left_description"].str.extract(MODEL)[0]
    right = neg["right_description"].str.extract(MODEL)[0]
    other_model = left.notna() & right.notna() & (left != right)
    assert same_brand.mean() > 0.3
    assert (same_brand & other_model).mean() > 0.1
    assert (~same_brand).mean() > 0.3


def test_duplicates_are_perturbed_not_copied(pairs):
    pos = pairs[pairs["label"]]
    assert (pos["left_title"] == pos["right_title"]).mean() < 0.02
    assert (pos["left_title"].str.casefold() != pos["right_title"].str.casefold()).mean() > 0.95


def test_description_length_mix(pairs):
    words = _words(pd.concat([pairs["left_description"], pairs["right_description"]]))
    assert 0 < (words > 150).mean() < 0.2
    assert words.between(20, 80).mean() > 0.6
    assert 0 < (words == 0).mean() < 0.1
    assert words.max() <= 420


def test_titles_range_from_short_to_long(pairs):
    words = _words(pd.concat([pairs["left_title"], pairs["right_title"]]))
    assert words.between(3, 6).mean() > 0.03
    assert (words > 15).mean() > 0.1


def test_offers_repeat_across_pairs(pairs):
    counts = _side_texts(pairs).value_counts()
    assert counts.size < 0.7 * 2 * len(pairs)
    assert counts.iloc[0] >= 5


def test_generated_intents_are_the_handwritten_ones(queries, examples):
    assert set(queries["intent"]) == set(examples["intent"])


def test_query_length_mix(queries):
    words = _words(queries["query"])
    assert words.le(5).mean() > 0.6
    assert 0 < words.gt(12).mean() < 0.15
    assert words.max() <= 40


def test_handwritten_set_is_large_enough_and_split(examples):
    assert list(examples.columns) == ["intent", "query", "split"]
    per_intent = examples.groupby("intent")["split"].agg(["size", lambda s: (s == "build").mean()])
    per_intent.columns = ["size", "build_share"]
    assert len(per_intent) >= 12
    assert per_intent["size"].min() >= 18
    assert per_intent["build_share"].between(0.55, 0.75).all()
    assert set(examples["split"]) == {"build", "heldout"}


def test_handwritten_queries_are_distinct_and_tidy(examples):
    normalised = examples["query"].str.casefold().str.replace(r"\s+", " ", regex=True).str.strip()
    assert normalised.is_unique
    assert normalised.ne("").all()
    assert (examples["query"] == examples["query"].str.strip()).all()


@pytest.mark.parametrize("kind,suffix", [("pairs", ".jsonl"), ("pairs", ".csv"), ("queries", ".parquet")])
def test_cli_writes_what_the_functions_return(tmp_path, capsys, kind, suffix):
    out = tmp_path / "sub" / f"data{suffix}"
    main([kind, "--rows", "60", "--seed", "5", "--out", str(out)])
    expected = product_pairs(60, seed=5) if kind == "pairs" else search_queries(60, seed=5)
    if suffix == ".jsonl":
        got = pd.read_json(out, lines=True, dtype=False)
    elif suffix == ".csv":
        got = pd.read_csv(out, dtype={c: str for c in expected.columns if c != "label"}, keep_default_na=False)
    else:
        got = pd.read_parquet(out)
    pd.testing.assert_frame_equal(got, expected)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 1 and re.search(rf"wrote 60 {kind} .* to {re.escape(str(out))}", printed[0])
