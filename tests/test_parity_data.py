"""--parity-data reads the jobs' own input (compiler/parity_data.py) as the jobs would score it."""
import pandas as pd
import pytest

from compiler import parity_data
from udfs.workloads import Duplicates


def _duplicates_input() -> pd.DataFrame:
    return pd.DataFrame({
        "pair_id": ["p1", "p2", "p3", "p4"],
        "left_title": ["USB-C charger", "  ", None, "Kettle"],
        "left_brand": ["Anker", None, "Acme", None],
        "right_title": ["65W charger", "Mug", "Toaster", None],
        "right_brand": [None, "Acme", "Acme", None],
    })


def test_duplicates_input_joins_fields_like_the_job_and_skips_what_it_would_not_score():
    frame = _duplicates_input()
    rows = parity_data.rows_from(frame, "pair-classification", ("title", "brand"))
    w = Duplicates(fields=("title", "brand"))
    assert rows[0] == (w.side(frame, "left")[0], w.side(frame, "right")[0]) == ("USB-C charger Anker", "65W charger")
    # p2: blank left side; p4: null right side; p3 has a left side from its brand alone
    assert rows == [("USB-C charger Anker", "65W charger"), ("Acme", "Toaster Acme")]


@pytest.mark.parametrize("suffix, fmt", [(".parquet", None), (".jsonl", None), (".csv", None), (".rows", "csv")])
def test_every_job_input_format_gives_the_same_rows(tmp_path, suffix, fmt):
    frame = _duplicates_input()
    path = tmp_path / f"pairs{suffix}"
    {"parquet": lambda: frame.to_parquet(path), "jsonl": lambda: frame.to_json(path, orient="records", lines=True),
     "csv": lambda: frame.to_csv(path, index=False)}[fmt or suffix[1:]]()
    rows = parity_data.read(path, "embedding", fmt, ("title", "brand"))
    assert rows == [("USB-C charger Anker", "65W charger"), ("Acme", "Toaster Acme")]


def test_intent_input_gives_its_queries_and_plain_columns_still_work():
    queries = pd.DataFrame({"query_id": [1, 2, 3], "query": ["where is my order", "", "return policy"]})
    assert parity_data.rows_from(queries, "text-classification") == ["where is my order", "return policy"]
    assert parity_data.rows_from(pd.DataFrame({"text": ["a", None]}), "text-classification") == ["a"]
    plain = pd.DataFrame({"left": ["a", "b"], "right": ["c", None]})
    assert parity_data.rows_from(plain, "pair-classification") == [("a", "c")]


def test_missing_columns_name_what_the_job_reads():
    with pytest.raises(ValueError, match=r"left_<field>/right_<field> columns for --fields title .*missing "
                                         r"\['left_title', 'right_title'\]"):
        parity_data.rows_from(pd.DataFrame({"pair_id": [1], "left_name": ["x"]}), "embedding", ("title",))
    with pytest.raises(ValueError, match="needs the intent job's 'query' column"):
        parity_data.rows_from(pd.DataFrame({"q": ["x"]}), "text-classification")
