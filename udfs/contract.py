"""The workload contract: what a job means, in one class, read by both scoring paths.

A workload says which slots a row has (a bi-encoder pair: `left` and `right`; a cross-encoder
pair: `pair`; a query: `query`), how a batch of rows becomes validated units per slot (with
each invalid row's reason), and how the units' results become its output columns. Both paths
are "units -> score the distinct units -> assemble" over it, and neither knows a job by name:

- per Arrow batch (`Workload.prepare` / `finish`, run by udfs/scorer.py on the workers): the
  batch's units are tokenized together, each distinct one goes through the engine once;
- per run (jobs/distinct_plan.py): units are keyed, deduplicated across the run, looked up in
  the result cache, scored, joined back to their rows, and assembled by `assemble` in an Arrow
  UDF (udfs/unit_results.py).

Unit results are the artifact task's values (engines/tasks.py, udfs/unit_values.py).
"""
from __future__ import annotations

import abc
import dataclasses

import numpy as np
import pandas as pd

from engines.tasks import Task, task as task_of
from udfs import unit_values
from udfs.model_outputs import Scored, Tokenized, run_units, tokenize_units

ID_COUNT = "_id_count"  # added by the job: how often each id occurs in the input
COMMON_DDL = "model string, status string, error string, truncated boolean"
NO_RESULT = "engine_error: no result for this row's texts"


@dataclasses.dataclass
class SlotResults:
    """One slot's unit results, aligned with the rows."""

    values: dict  # the task's values in memory (udfs/unit_values.py)
    found: np.ndarray  # bool: the row's unit has a result (false for invalid rows)
    error: np.ndarray  # None, or why the engine could not score the unit
    truncated: np.ndarray
    model: np.ndarray | None = None  # the artifact that scored each unit; None: the run's
    hit: np.ndarray | None = None  # bool: from the result cache; None: none were


@dataclasses.dataclass
class Prepared:
    """An Arrow batch checked and tokenized (`Workload.prepare`), ready for the engine (`finish`)."""

    frame: pd.DataFrame
    invalid: np.ndarray
    ok: np.ndarray
    tokenized: Tokenized


class Workload(abc.ABC):
    """A job's meaning. Subclasses are frozen dataclasses of the job's options, so that Spark
    pickles them with the scorer, and declare `tasks` (the artifact tasks they score) and
    `id_column`."""

    tasks: tuple[str, ...]
    id_column: str

    @abc.abstractmethod
    def slots(self, task: Task) -> tuple[str, ...]:
        """The units a row has, by name: one per text the artifact scores on its own."""

    @property
    @abc.abstractmethod
    def text_columns(self) -> list[str]:
        """The input columns read as text."""

    @property
    def required_columns(self) -> list[str]:
        return [self.id_column, *self.text_columns]

    @property
    def optional_columns(self) -> list[str]:
        """Text columns read as empty when absent (the job reports them as fields_absent)."""
        return []

    def flag_columns(self) -> dict[str, str]:
        """{column: the flag as typed} for columns named by a flag set to other than its default:
        a column missing from the input is then more likely the flag's misspelling."""
        return {}

    @abc.abstractmethod
    def unit_noun(self, task: Task) -> str:
        """What one unit is, for the run-level plan's progress lines: "pairs", "queries", "texts"."""

    @abc.abstractmethod
    def checked_units(self, frame: pd.DataFrame, task: Task) -> tuple[np.ndarray, list[list[pd.Series]]]:
        """(why each row cannot be scored, or None; per slot, the unit's texts: two Series for a
        pair-input artifact, one otherwise)."""

    @abc.abstractmethod
    def value_ddl(self) -> str:
        """The job's own output columns, between the id and COMMON_DDL."""

    @abc.abstractmethod
    def values(self, task: Task, results: dict[str, dict], ok: np.ndarray, manifest) -> dict:
        """The `value_ddl` columns for all rows from each slot's unit values; null/NaN where `ok`
        (the row's status is ok) is False."""

    def head(self, task: Task) -> dict:
        """Settings of the head that a stored unit result depends on (part of its cache key)."""
        return {}

    def default_dedup(self, task: Task) -> str:
        """Where identical texts are scored once by default: "run" where repeats are expected across
        Arrow batches (a bi-encoder's products in many pairs), else "batch"."""
        return "batch"

    def output_ddl(self) -> str:
        return f"{self.id_column} string, {self.value_ddl()}, {COMMON_DDL}"

    # The per-batch path, run by udfs/scorer.py for each Arrow batch.
    def prepare(self, runtime, frame: pd.DataFrame) -> Prepared:
        invalid, units = self.checked_units(frame, task_of(runtime.manifest.task))
        ok = invalid == None  # noqa: E711 - elementwise on an object array
        return Prepared(frame, invalid, ok, tokenize_units(runtime, [[t[ok].tolist() for t in unit] for unit in units]))

    def finish(self, runtime, prepared: Prepared, token_budget: int, progress=None) -> tuple[pd.DataFrame, Scored]:
        """`progress(n)`: n of this batch's valid rows scored so far (live progress)."""
        manifest, ok = runtime.manifest, prepared.ok
        task = task_of(manifest.task)
        scored = run_units(runtime, prepared.tokenized, token_budget, progress)
        slots = {}
        for i, slot in enumerate(self.slots(task)):
            good = scored.errors[i] == None  # noqa: E711
            values = unit_values.from_outputs(task, scored.outputs[i], good, manifest, self.head(task))
            error, truncated = np.full(len(ok), None, dtype=object), np.zeros(len(ok), dtype=bool)
            error[ok], truncated[ok] = scored.errors[i], scored.truncated[i]
            slots[slot] = SlotResults(unit_values.scatter(values, ok), ok, error, truncated)
        ids = prepared.frame[self.id_column].astype(object).to_numpy()
        out, _ = assemble(self, task, manifest, ids, prepared.invalid, slots, manifest.model_id)
        return out, scored


def assemble(workload: Workload, task: Task, manifest, ids: np.ndarray, invalid: np.ndarray,
             slots: dict[str, SlotResults], model_id: str) -> tuple[pd.DataFrame, np.ndarray]:
    """The output rows (workload's columns, model, status, error, truncated) and which rows were
    served from the cache in full, from the rows' invalid reasons and each slot's results.
    `model_id`: the model of rows no unit result names (invalid rows)."""
    n = len(ids)
    bad_input = invalid != None  # noqa: E711 - elementwise on an object array
    missing = np.zeros(n, dtype=bool)
    engine_error = np.full(n, None, dtype=object)
    truncated = np.zeros(n, dtype=bool)
    model = np.full(n, model_id, dtype=object)
    hit = ~bad_input
    for s in reversed(slots.values()):  # the first slot's error and model win, as in a coalesce
        missing |= ~s.found
        has_error = s.error != None  # noqa: E711
        engine_error[has_error] = s.error[has_error]
        truncated |= s.found & s.truncated
        if s.model is not None:
            named = s.model != None  # noqa: E711
            model[named] = s.model[named]
        hit &= s.hit if s.hit is not None else False
    failed = ~bad_input & (missing | (engine_error != None))  # noqa: E711
    status = np.where(bad_input, "invalid_input", np.where(failed, "error", "ok")).astype(object)
    error = np.where(bad_input, invalid, np.where(engine_error != None, engine_error,  # noqa: E711
                                                  np.where(failed, NO_RESULT, None)))
    ok = status == "ok"
    columns = workload.values(task, {slot: s.values for slot, s in slots.items()}, ok, manifest)
    out = pd.DataFrame({workload.id_column: ids, **columns, "model": model, "status": status,
                        "error": error, "truncated": truncated & ~bad_input})
    return out, hit
