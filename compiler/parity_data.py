"""The rows `--parity-data` gives the int8 gate: the job's own input, or plain text columns.

A duplicates input (`pair_id`, `left_<field>` / `right_<field>` per `--fields`) becomes
(left, right) pairs joined exactly as the job joins them (udfs.workloads.Duplicates.side); an
intent input gives its `query` column. `left,right` (pair tasks) and `text` (text-classification)
columns are read as they are. Rows the job would mark invalid_input (a null or blank text) are
left out: the job never scores them, so they say nothing about its labels.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from engines.tasks import task as task_of
from jobs.cli import format_from_path
from udfs.validate import first_problem, text_problems
from udfs.workloads import Duplicates, QueryIntent


def read_frame(path: Path, input_format: str | None = None) -> pd.DataFrame:
    """`path` as the job would read it: --input-format, else from the suffix, else parquet."""
    fmt = input_format or format_from_path(str(path))
    if fmt == "jsonl":
        return pd.read_json(path, lines=True)
    if fmt == "csv":
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    return pd.read_parquet(path)


def _texts(column: pd.Series) -> pd.Series:
    return column.where(column.isna(), column.astype(str))


def _scorable(*sides: pd.Series) -> np.ndarray:
    problems = first_problem(*(text_problems(s, "text") for s in sides))
    return np.array([p is None for p in problems], dtype=bool)


def rows_from(frame: pd.DataFrame, task: str, fields: tuple[str, ...] = Duplicates.fields) -> list:
    """The rows the task's score gate judges (engines/tasks.py `gate_rows`): (left, right) pairs, or
    texts."""
    if task_of(task).gate_rows == "texts":
        column = "text" if "text" in frame else QueryIntent.query_column
        if column not in frame:
            raise ValueError(f"needs the intent job's {column!r} column (or 'text') for a {task} artifact; "
                             f"it has {sorted(frame.columns)}")
        texts = _texts(frame[column])
        return texts[_scorable(texts)].tolist()
    if {"left", "right"} <= set(frame.columns):
        left, right = _texts(frame["left"]), _texts(frame["right"])
    else:
        workload = Duplicates(fields=fields)
        first = [f"left_{fields[0]}", f"right_{fields[0]}"]
        if missing := [c for c in first if c not in frame]:
            raise ValueError(f"needs the duplicates job's left_<field>/right_<field> columns for --fields "
                             f"{','.join(fields)} (missing {missing}), or left,right, for a {task} artifact; "
                             f"it has {sorted(frame.columns)}")
        sides = frame.assign(**{c: _texts(frame[c]) for c in workload.text_columns if c in frame})
        left, right = workload.side(sides, "left"), workload.side(sides, "right")
    ok = _scorable(left, right)
    return list(zip(left[ok], right[ok]))


def read(path: Path, task: str, input_format: str | None = None,
         fields: tuple[str, ...] = Duplicates.fields) -> list:
    return rows_from(read_frame(path, input_format), task, fields)
