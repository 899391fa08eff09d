"""What the scorer measures per Arrow batch, as one typed record (`BatchMetrics`), and how the run
summary adds it up (`aggregates`): each metric named, typed and documented in one place.

The record travels beside the batch's rows, as a few `_m_<name>` columns set on the batch's first
row and null elsewhere (udfs/scorer.py): Spark's Observation adds them up in the same pass that
writes the rows, so the metrics cost no second job, and the output stays Arrow from end to end.
The driver drops the columns before writing.
"""
from __future__ import annotations

import dataclasses

PREFIX = "_m_"


def _metric(spark_type: str, aggregate: str, doc: str, summary: str | None = None):
    """A field of BatchMetrics: its Spark type, how the run adds it up ("sum", or "set"/"list" of
    JSON lines: an Observation returns scalars only), and the summary key it becomes."""
    return dataclasses.field(metadata={"type": spark_type, "aggregate": aggregate, "doc": doc, "summary": summary})


@dataclasses.dataclass(frozen=True)
class BatchMetrics:
    real_tokens: int = _metric("long", "sum", "tokens of the units scored, padding excluded")
    padded_tokens: int = _metric("long", "sum", "tokens the engine ran, padding included")
    engine_loads: int = _metric("int", "sum", "1 on the first batch of a task that loaded the engine")
    engine_seconds: float = _metric("double", "sum", "seconds in the engine's calls")
    batch_retries: int = _metric("int", "sum", "device batches split and run again after an engine error")
    task: str = _metric("string", "set", "the task's JSON record: host, device, partition, attempt, ...",
                        summary="tasks")
    tokenize_seconds: float = _metric("double", "sum", "seconds tokenizing")
    udf_seconds: float = _metric("double", "sum", "seconds in the workload's prepare and finish")
    batch: str = _metric("string", "list", "[partition, attempt, task start, batch end, rows] (jobs/timeline.py)",
                         summary="batches")

    def values(self) -> tuple:
        return dataclasses.astuple(self)


FIELDS = dataclasses.fields(BatchMetrics)
DDL = ", ".join(f"{PREFIX}{f.name} {f.metadata['type']}" for f in FIELDS)
COLUMNS = [PREFIX + f.name for f in FIELDS]


def aggregates(F) -> list:
    """The Observation's expressions over the metric columns, named as the run summary's keys, plus
    `units_scored`: the rows the scorer returned."""
    exprs = [F.count(F.lit(1)).alias("units_scored")]
    for f in FIELDS:
        column, name = PREFIX + f.name, f.metadata["summary"] or f.name
        if f.metadata["aggregate"] == "sum":
            exprs.append(F.sum(column).alias(name))
        else:
            collect = F.collect_set if f.metadata["aggregate"] == "set" else F.collect_list
            exprs.append(F.concat_ws("\n", collect(column)).alias(name))
    return exprs
