"""How many tasks a run scores in, whatever the input's file layout.

Spark splits Parquet at row-group boundaries, so one file written with pyarrow's defaults (a
row group holds up to 1Mi rows) is one task for a million rows, and its other splits are empty:
one core of the whole cluster does the work while the rest wait. So the rows are spread over at
least as many tasks as Spark has cores (`spark.default.parallelism`), and over more when a task
would hold more than ROWS_PER_TASK rows (a retried or slow task then costs a fraction of the
run). No task gets less than one Arrow batch of rows: below that, a shuffle costs more than the
second core saves. An input whose partitions already hold the rows evenly enough is left as it
is, since spreading it again is a shuffle of every row; `--num-partitions` overrides all of this.
"""
from __future__ import annotations

import dataclasses
import math

ROWS_PER_TASK = 250_000
UNEVEN = 1.5  # the largest input partition over an even share of the rows, above which rows are spread


@dataclasses.dataclass(frozen=True)
class Partitioning:
    tasks: int
    input_partitions: int  # those holding rows
    largest_input_partition: int  # rows
    spread: bool  # whether the rows are shuffled into `tasks` before scoring
    reason: str

    def summary(self) -> dict:
        return {"tasks": self.tasks, "input_partitions": self.input_partitions,
                "largest_input_partition": self.largest_input_partition, "spread": self.spread, "reason": self.reason}


def decide(partition_rows: list[int], cores: int, arrow_batch_rows: int, num_partitions: int | None = None) -> Partitioning:
    """`partition_rows`: the rows of each input partition that holds any."""
    rows, held = sum(partition_rows), [n for n in partition_rows if n]
    largest = max(held, default=0)
    if num_partitions:
        return Partitioning(num_partitions, len(held), largest, True, "--num-partitions")
    wanted = max(1, min(max(cores, math.ceil(rows / ROWS_PER_TASK)), math.ceil(rows / arrow_batch_rows)))
    if len(held) >= wanted and largest <= UNEVEN * rows / len(held) or rows == 0:
        return Partitioning(max(1, len(held)), len(held), largest, False, "the input's own partitions")
    why = (f"{cores} cores" + (f", at most {ROWS_PER_TASK:,} rows a task" if wanted > cores else "")
           if wanted >= cores else f"no task under {arrow_batch_rows:,} rows, one Arrow batch")
    where = ("all in one input partition" if len(held) == 1
             else f"up to {largest:,} in one of {len(held)} input partitions")
    return Partitioning(wanted, len(held), largest, True, f"spread for {why}; the rows were {where}")
