"""The run-level plan's last step on the workers: rows joined to their units' results -> the job's
output rows, through the same `contract.assemble` as the per-batch path, so both paths give the
same columns, statuses and values by construction.

A mapInArrow function over the joined rows (jobs/distinct_plan.py): each slot's result columns
arrive as `_r_<slot>_<column>` (null where the join found no result), are read from the Arrow
batch at once (udfs/unit_values.py), and leave as the workload's output columns plus `_hit`
(every unit of the row came from the result cache).
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from engines.tasks import task as task_of
from udfs import unit_values
from udfs.contract import SlotResults, Workload, assemble
from udfs.scorer import arrow_schema, frame_columns
from udfs.scoring_units import INVALID, UnitSpec

RESULT_COLUMNS = ("_key", "truncated", "error", "_model", "_from_cache")  # besides the task's values


def result_column(slot: str, column: str) -> str:
    return f"_r_{slot}_{column}"


class Assembler:
    def __init__(self, workload: Workload, spec: UnitSpec, manifest):
        self.workload, self.spec, self.manifest = workload, spec, manifest
        self.schema = arrow_schema(self.output_ddl())

    def output_ddl(self) -> str:
        return f"{self.workload.output_ddl()}, _hit boolean"

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task = task_of(self.spec.task)
        for batch in batches:
            column = dict(zip(batch.schema.names, batch.columns))
            slots = {}
            for slot in self.spec.slots:
                def c(name: str, slot=slot) -> pa.Array:
                    return column[result_column(slot, name)]

                slots[slot] = SlotResults(
                    unit_values.from_arrow(task, {v: c(v) for v in task.value_columns}),
                    found=_numpy(c("_key").is_valid()), error=_numpy(c("error")),
                    truncated=_numpy(c("truncated").fill_null(False)), model=_numpy(c("_model")),
                    hit=_numpy(c("_from_cache").fill_null(False)))
            out, hit = assemble(self.workload, task, self.manifest, _numpy(column[self.workload.id_column]),
                                _numpy(column[INVALID]), slots, self.manifest.model_id)
            out["_hit"] = hit
            yield pa.RecordBatch.from_arrays(frame_columns(out, self.schema), schema=self.schema)


def _numpy(array: pa.Array):
    """An Arrow column as numpy: strings as objects with None for nulls, booleans as bool."""
    values = array.to_numpy(zero_copy_only=False)
    return values.astype(object) if values.dtype.kind in "OU" else values
