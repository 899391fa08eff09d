"""What each artifact task means, in one table: read by the manifest check, the parity gates
(engines/parity.py), the scoring units and their cache format (udfs/), and the jobs' plans, so
none of them switches on a task's name.

A task is what the compiled graph computes per encoded row. Which rows a job builds from its
input is the workload's business (udfs/workload.py): the duplicates job sends a bi-encoder's
`embedding` artifact one side at a time and compares the two sides; the embeddings job sends
the same artifact one text and keeps its vector.
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    pair_input: bool  # one encoded row is two texts (a cross-encoder); else one text
    output: str  # "logits" (a classifier head: labels required) or "embedding" (a pooled, normalised vector)
    # A unit's result as the scorer returns it and the result cache keeps it (udfs/unit_values.py).
    value_ddl: str
    # The rows the compile-time score gate judges (engines/probes.scored_rows): "pairs" of texts
    # (a cross-encoder's input, or two embeddings compared by cosine) or single "texts".
    gate_rows: str

    @property
    def embeds(self) -> bool:
        return self.output == "embedding"

    @property
    def value_columns(self) -> tuple[str, ...]:
        return tuple(part.split()[0] for part in split_ddl(self.value_ddl))


TOP_K_DDL = "array<struct<label: string, score: double>>"

TABLE = {t.name: t for t in (
    Task("pair-classification", pair_input=True, output="logits", value_ddl="score double", gate_rows="pairs"),
    Task("text-classification", pair_input=False, output="logits",
         value_ddl=f"intent string, confidence double, top_k {TOP_K_DDL}", gate_rows="texts"),
    # An embedding unit's value is its float32 vector as little-endian bytes: one buffer per batch in
    # Arrow and Parquet (udfs/unit_values.py, docs/performance.md).
    Task("embedding", pair_input=False, output="embedding", value_ddl="embedding binary", gate_rows="pairs"),
)}
TASKS = tuple(TABLE)


def task(name: str) -> Task:
    """The table's row for `name` (KeyError for a name the manifest check would have refused)."""
    return TABLE[name]


def split_ddl(ddl: str) -> list[str]:
    """'a string, b array<struct<x: string, y: double>>' -> its top-level column definitions."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(ddl):
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            parts.append(ddl[start:i].strip())
            start = i + 1
    parts.append(ddl[start:].strip())
    return [p for p in parts if p]
