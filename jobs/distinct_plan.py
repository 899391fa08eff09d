"""Score each distinct unit once per run, and with --cache once until the model changes.

    input rows -> keyed rows (udfs/scoring_units.Keyer: validation, texts, keys)
               -> distinct units -> minus the cache's entries -> scored (udfs/scorer.py)
               -> joined back to every row -> the job's output columns (udfs/assembly.py: the
                  workload's own assembly, as in the per-batch plan)

A unit is a cross-encoder's pair, a classifier's query, one side of a bi-encoder pair or a text
to embed (udfs/scoring_units.py), so a product that appears in many candidate pairs is embedded once. The keyed
rows and the distinct units are persisted: three Spark jobs read them (the count that sizes the
progress bar, the scoring, the join back), and none may run the workers' Python twice. So are a
bi-encoder's scored units, which the join back reads once per side. All three are persisted on
the executors' local disks (DISK_ONLY), written and read as streams: held in memory
(MEMORY_AND_DISK), a million pairs ran local[2] out of a 2 GB heap; on disk 2,000,000 finish
with a 1 GB heap, and the JVM's peak there is within 1.3x of 200,000's (bench/results/scale.md),
the Python processes' within 1%. The job persists them without the columnar
cache's encodings, which texts and hex keys do not shrink (jobs/runner.py). The join back
carries ids and keys, not texts.
"""
from __future__ import annotations

import dataclasses

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from udfs import metrics
from udfs.assembly import RESULT_COLUMNS, Assembler, result_column
from udfs.scorer import Scorer, output_ddl
from udfs.scoring_units import INVALID, Keyer, UnitScoring, UnitSpec, key_column, text_columns


@dataclasses.dataclass
class UnitCounts:
    distinct: int  # distinct units among the valid rows
    cached: int  # of which the cache already holds
    cached_tokens: int  # their real tokens: what the engine does not run this time

    @property
    def to_score(self) -> int:
        return self.distinct - self.cached


class DistinctPlan:
    def __init__(self, df: DataFrame, workload, manifest, max_seq_len: int, partitions: int, cache=None):
        self.workload, self.manifest = workload, manifest
        self.spec = UnitSpec.of(workload, manifest.task, max_seq_len)
        keyer = Keyer(workload, self.spec)
        self.keyed = df.mapInPandas(keyer, keyer.ddl()).persist(StorageLevel.DISK_ONLY)
        # Each slot's unit as a row, from one scan of the keyed rows (a union of one select per
        # slot would read them once per slot, in as many Spark jobs).
        units = self.keyed.select(F.inline(F.array(*(
            F.struct(F.col(key_column(s)).alias("_key"), *(F.col(c).alias(n) for c, n in zip(text_columns(s), ("_a", "_b"))))
            for s in self.spec.slots)))).where(F.col("_key").isNotNull())
        # Hash-partitioned by key into the run's scoring tasks before the distinct, which then needs no
        # shuffle of its own, and the scoring stage reads the persisted units in those partitions.
        units = units.repartition(partitions, "_key").dropDuplicates(["_key"])
        self.cached = None
        if cache:
            entries = cache.entries(cache.markers())  # this run's snapshot of the cache
            # Only keys and token counts cross the whole cache; results are read for this run's hits only.
            keys = entries.select("_key", F.col("_tokens").alias("_cached_tokens")).dropDuplicates(["_key"])
            units = units.join(keys, "_key", "left")
        else:
            units = units.withColumn("_cached_tokens", F.lit(None).cast("long"))
        self.units = units.persist(StorageLevel.DISK_ONLY)
        if cache:
            self.cached = entries.join(self.used_keys(), "_key", "left_semi").dropDuplicates(["_key"])
        self.persisted: list[DataFrame] = []

    def count(self) -> UnitCounts:
        cached = F.col("_cached_tokens").isNotNull()
        row = self.units.agg(F.count(F.lit(1)).alias("n"), F.sum(cached.cast("long")).alias("cached"),
                             F.sum(F.when(cached, F.col("_cached_tokens"))).alias("tokens")).first()
        return UnitCounts(int(row["n"] or 0), int(row["cached"] or 0), int(row["tokens"] or 0))

    def scored_units(self, spec, resources, counts: UnitCounts | None, observe, staging: str | None) -> DataFrame:
        """The units the cache lacks through the engine, scored once and then read as often as the
        plan needs: staged as Parquet under `staging` (a cached run reads them for the output and
        again for its new batch), else persisted when the join back reads them once per side
        (adaptive execution does not reuse that exchange, so the engine would run twice).
        `resources` (jobs/stage_resources.py) runs the scorer with the scoring stage's resource profile;
        `observe(df)` adds the run summary's observation over the scorer's metric columns. `counts`:
        None where nothing was counted (jobs/api.py plans without running a Spark job)."""
        scoring = UnitScoring(self.spec)
        spark = self.keyed.sparkSession
        if counts is not None and not counts.to_score:  # everything cached: no engine is loaded at all
            return spark.createDataFrame([], scoring.output_ddl())
        todo = self.units.where(F.col("_cached_tokens").isNull()).select("_key", "_a", "_b")
        scored = observe(resources.map_in_arrow(todo, Scorer(spec, scoring),
                                                 output_ddl(scoring))).drop(*metrics.COLUMNS)
        if staging:
            scored.write.parquet(staging)
            return spark.read.schema(scoring.output_ddl()).parquet(staging)
        if len(self.spec.slots) > 1:
            scored = scored.persist(StorageLevel.DISK_ONLY)
            self.persisted.append(scored)
        return scored

    def used_keys(self) -> DataFrame:
        return self.units.where(F.col("_cached_tokens").isNotNull()).select("_key")

    def rows(self, fresh: DataFrame) -> DataFrame:
        """Every input row in the job's output columns (plus `_hit`: all its units came from the
        cache), from the freshly scored units (`scored_units`) and the cache, assembled on the
        workers by the workload (udfs/assembly.py)."""
        value_cols = self.spec.value_columns
        results = fresh.select("_key", *value_cols, "truncated", "error", "_model", F.lit(False).alias("_from_cache"))
        if self.cached is not None:
            results = results.unionByName(self.cached.select(
                "_key", *value_cols, "truncated", F.lit(None).cast("string").alias("error"),
                F.lit(self.manifest.model_id).alias("_model"), F.lit(True).alias("_from_cache")))
        # The texts stay behind: the join back shuffles each row's id, status and keys only.
        rows = self.keyed.select(self.workload.id_column, INVALID, *(key_column(s) for s in self.spec.slots))
        for slot in self.spec.slots:
            r = results.select(*(F.col(c).alias(result_column(slot, c)) for c in (*value_cols, *RESULT_COLUMNS)))
            rows = rows.join(r, rows[key_column(slot)] == r[result_column(slot, "_key")], "left")
        assembler = Assembler(self.workload, self.spec, self.manifest)
        return rows.mapInArrow(assembler, assembler.output_ddl())

    def close(self) -> None:
        for df in self.persisted:
            df.unpersist()
        self.units.unpersist()
        self.keyed.unpersist()

