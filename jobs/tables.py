"""Where a run's rows go, and the tables people query them through (README.md, "Output tables").

Two kinds of --output:
- a folder: partitioned Parquet, each run replacing its `run_date=` folder (jobs/spark_io.py); with
  --register-table <db>.<table>, the session catalog's (Hive metastore, on EMR the Glue Data Catalog)
  table over that folder is created once and each run's partition added to it, so Athena, Trino and
  Spark SQL see a new date without a crawler;
- `iceberg:<catalog>.<namespace>.<table>`: an Apache Iceberg table in a catalog the Spark
  configuration names (`spark.sql.catalog.<catalog>`), created on first use partitioned by
  `run_date`; each run replaces exactly its date in one commit (an overwrite by the filter
  `run_date = <date>`: readers see the old date or the new one, never a mix, and other dates' data
  files are not touched). A table keeps no folder of ours, so its leases, summaries and reports go
  under --runs-dir, in `<runs-dir>/_runs/` as a folder output's go in `<output>/_runs/`.

Every check that can refuse a run (a bad name, an unknown catalog, a table of another schema or
partitioning) runs before any task, and refuses in one line (exit 2).
"""
from __future__ import annotations

import dataclasses
import re
import uuid

from jobs import console, hadoop_files
from jobs.spark_io import InputError, first_line, qualified, write_scores

ICEBERG = "iceberg:"
PARTITION = "run_date"
_NAME_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Snapshot summary properties each commit carries (Iceberg's `snapshot-property.` write option):
# `<table>.snapshots` then says which job, date and run wrote each snapshot.
SNAPSHOT_PROPERTY = "accel-scoring."


@dataclasses.dataclass(frozen=True)
class Output:
    """--output, --runs-dir and --register-table, checked for their form."""

    output: str  # as given (a folder, or iceberg:<catalog>.<namespace>.<table>)
    table: str | None  # an Iceberg output's <catalog>.<namespace>.<table>
    root: str  # the folder whose _runs/run_date=<date>/ holds the run's lease, summary.json and report.html
    register: str | None  # --register-table <db>.<table> over a Parquet folder

    @property
    def folder(self) -> str | None:
        """The folder the rows land in (None for a table: the catalog decides)."""
        return None if self.table else self.output

    def describe(self, run_date: str) -> str:
        return f"{self.output} run_date={run_date}" if self.table else f"{self.output}/{PARTITION}={run_date}"


def parse(output: str, runs_dir: str | None, register_table: str | None) -> Output:
    """The Output the flags name; InputError for a malformed name or a flag that does not fit it."""
    if output.startswith(ICEBERG):
        table = output[len(ICEBERG):]
        parts = table.split(".")
        if len(parts) < 3 or not all(_NAME_PART.fullmatch(p) for p in parts):
            raise InputError(f"--output {output}: an Iceberg table is iceberg:<catalog>.<namespace>.<table>, each "
                             f"part letters, digits and underscores, not starting with a digit")
        if not runs_dir:
            raise InputError(f"--output {output} is a table, which has no folder of ours: give --runs-dir <folder> "
                             f"for the run's leases, summary.json and report.html")
        if register_table:
            raise InputError("--register-table registers a Parquet --output; an Iceberg --output is its catalog's table already")
        return Output(output, table, runs_dir.rstrip("/"), None)  # its runs in <runs-dir>/_runs, as a folder's
    if runs_dir:
        raise InputError(f"--runs-dir is for a table --output; a folder --output keeps its runs in {output}/_runs")
    if register_table is not None:
        parts = register_table.split(".")
        if len(parts) != 2 or not all(_NAME_PART.fullmatch(p) for p in parts):
            raise InputError(f"--register-table {register_table}: expected <database>.<table>, each part letters, "
                             f"digits and underscores, not starting with a digit")
    return Output(output, None, output, register_table)


def written_schema(workload):
    """The columns a run writes: the job's output columns and run_date (parsed by the driver's Spark)."""
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(f"{workload.output_ddl()}, {PARTITION} string")


def check(spark, out: Output, workload) -> None:
    """Refuse (InputError) a table this run could not write as its own, before any task runs."""
    if out.table:
        _check_iceberg(spark, out, written_schema(workload))
    elif out.register:
        _check_registered(spark, out, written_schema(workload))


def prepare(spark, out: Output, workload) -> None:
    """Create the Iceberg table (and its namespace) on first use, once every check has passed: a
    catalog that refuses (permissions, an unreachable metastore) fails the run before scoring."""
    if not out.table:
        return
    catalog, *namespace, _ = out.table.split(".")
    schema = written_schema(workload)
    columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in schema.fields)
    try:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.{'.'.join(namespace)}")
        # distribution-mode none: a run writes one date, so each task writes its own rows as they
        # come, without Iceberg's default shuffle of every row to one writer per partition value
        spark.sql(f"CREATE TABLE IF NOT EXISTS {out.table} ({columns}) USING iceberg PARTITIONED BY ({PARTITION}) "
                  f"TBLPROPERTIES ('write.distribution-mode' = 'none')")
    except Exception as e:  # noqa: BLE001 - the catalog's refusal, as one line
        raise InputError(f"--output {out.output}: cannot create the table: {first_line(e)}") from None


def write(df, out: Output, run_date: str, *, job: str, application_id: str) -> dict | None:
    """Write the run's rows (with their run_date column) to `out`: replace the date, commit, and
    return what the summary records of the table (None for an unregistered folder)."""
    from pyspark.sql import functions as F

    if not out.table:
        write_scores(df, out.output)
        return _register(df.sparkSession, out, run_date, df.schema) if out.register else None
    run_id = uuid.uuid4().hex
    properties = {"job": job, "run_date": run_date, "application_id": application_id, "run_id": run_id}
    writer = df.writeTo(out.table).option("distribution-mode", "none")
    for key, value in properties.items():
        writer = writer.option(f"snapshot-property.{SNAPSHOT_PROPERTY}{key}", value)
    writer.overwrite(F.col(PARTITION) == F.lit(run_date))
    return {"format": "iceberg", "name": out.table, **_snapshot(df.sparkSession, out.table, run_id)}


def settle(spark, out: Output, run_date: str, rows_written: int) -> None:
    """After the write, once its row count is known: dynamic partition overwrite replaces only the
    dates it writes rows to, so a run of no rows (an empty input) would leave a folder output's
    previous rows of the date to its readers. They are deleted and the date's folder left empty
    (a registered partition's location stays readable). An Iceberg overwrite by filter replaces
    the date whatever it holds."""
    if out.table or rows_written:
        return
    folder = f"{out.output}/{PARTITION}={run_date}"
    hadoop_files.delete(spark, folder)
    hadoop_files.make_folder(spark, folder)
    console.say(f"no rows for run_date={run_date}: {folder} emptied")


def _snapshot(spark, table: str, run_id: str) -> dict:
    """This run's commit, found by the run id its snapshot summary carries."""
    row = spark.sql(f"SELECT snapshot_id, parent_id, committed_at, operation, summary FROM {table}.snapshots "
                    f"WHERE summary['{SNAPSHOT_PROPERTY}run_id'] = '{run_id}'").first()
    summary = row["summary"]
    return {"snapshot_id": row["snapshot_id"], "parent_snapshot_id": row["parent_id"],
            "committed_at": row["committed_at"].isoformat(), "operation": row["operation"],
            "added_records": int(summary.get("added-records", 0)), "deleted_records": int(summary.get("deleted-records", 0)),
            "added_files": int(summary.get("added-data-files", 0)), "deleted_files": int(summary.get("deleted-data-files", 0))}


def _check_iceberg(spark, out: Output, schema) -> None:
    catalog = out.table.split(".")[0]
    if not spark.conf.get(f"spark.sql.catalog.{catalog}", None):
        raise InputError(f"--output {out.output}: no catalog {catalog!r} is configured (spark.sql.catalog.{catalog}); "
                         f"README.md, \"Output tables\", has the settings for a local, S3 and Glue catalog")
    found = _existing(spark, out.table, f"--output {out.output}", "iceberg")
    if found:
        _same_layout(f"--output {out.output}", found, schema)


def _check_registered(spark, out: Output, schema) -> None:
    if spark.conf.get("spark.sql.catalogImplementation", "in-memory") != "hive":
        raise InputError(f"--register-table {out.register} needs Spark's Hive catalog "
                         f"(spark.sql.catalogImplementation=hive: a Hive metastore, or on EMR the Glue Data Catalog); "
                         f"this session's catalog is {spark.conf.get('spark.sql.catalogImplementation', 'in-memory')}")
    flag = f"--register-table {out.register}"
    found = _existing(spark, out.register, flag, "parquet")
    if not found:
        return
    if qualified(spark, found.location) != qualified(spark, out.output):
        raise InputError(f"{flag} is the table over {found.location}, not over --output {out.output}: give each "
                         f"output its own table")
    _same_layout(flag, found, schema)


@dataclasses.dataclass(frozen=True)
class _Existing:
    provider: str  # iceberg, parquet, hive, ...
    partitions: list[str]  # partition columns (Iceberg: transforms, e.g. bucket(4, id))
    location: str
    schema: object  # its StructType


def _existing(spark, name: str, flag: str, provider: str) -> _Existing | None:
    """What the catalog says of the table `name`, refused unless it is a `provider` table; None where there is none."""
    from pyspark.errors import AnalysisException

    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    except AnalysisException as e:
        if getattr(e, "getErrorClass", lambda: None)() == "TABLE_OR_VIEW_NOT_FOUND" or "TABLE_OR_VIEW_NOT_FOUND" in str(e):
            return None
        raise InputError(f"{flag}: {first_line(e)}") from None
    except Exception as e:  # noqa: BLE001 - a catalog that cannot load (a missing class, an unreachable store)
        raise InputError(f"{flag}: the catalog cannot be read: {first_line(e)}") from None
    info = {r["col_name"]: r["data_type"] for r in rows}
    partitions, section = [], None
    for r in rows:
        name_ = r["col_name"].strip()
        if name_ == "# col_name":  # the header row of a section
            continue
        if name_.startswith("#"):
            section = name_
        elif not name_:
            section = None
        elif section in ("# Partition Information", "# Partitioning"):
            partitions.append(r["data_type"] if section == "# Partitioning" else name_)
    found = _Existing(info.get("Provider", "").lower(), partitions, info.get("Location", ""), spark.table(name).schema)
    if found.provider != provider:
        raise InputError(f"{flag} is a {found.provider or 'view or unknown kind of'} table, not a {provider} one")
    return found


def _same_layout(flag: str, existing: _Existing, schema) -> None:
    """The table must take exactly the run's columns, types, and be partitioned by run_date alone:
    an overwrite of one date in a table partitioned otherwise would replace other rows too."""
    if existing.partitions != [PARTITION]:
        raise InputError(f"{flag} is partitioned by {existing.partitions or 'nothing'}, not by {PARTITION} alone: "
                         f"a run replaces one {PARTITION}; write to a new table")
    have = {f.name: f.dataType.simpleString() for f in existing.schema.fields}
    want = {f.name: f.dataType.simpleString() for f in schema.fields}
    for name, kind in want.items():
        if name not in have:
            raise InputError(f"{flag} has no column {name} ({kind}); it has {', '.join(have)}: its schema is "
                             f"not this job's output; write to a new table")
        if have[name] != kind:
            raise InputError(f"{flag} has column {name} as {have[name]}, and this job writes {kind}: write to a "
                             f"new table, or migrate this one")
    extra = [n for n in have if n not in want]
    if extra:
        raise InputError(f"{flag} has column(s) {', '.join(extra)} that this job does not write; write to a new table")


def _register(spark, out: Output, run_date: str, schema) -> dict:
    """The session catalog's table over the Parquet folder (created on first use), with this run's
    partition added: where the metastore already has the partition, its folder was replaced in place."""
    database, _ = out.register.split(".")
    location = qualified(spark, out.output)
    data = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in schema.fields if f.name != PARTITION)
    hadoop_files.make_folder(spark, f"{location}/{PARTITION}={run_date}")  # a run of no rows wrote none
    spark.sql(f"CREATE DATABASE IF NOT EXISTS `{database}`")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {out.register} ({data}, `{PARTITION}` string) USING parquet "
              f"PARTITIONED BY ({PARTITION}) LOCATION '{location}'")
    spark.sql(f"ALTER TABLE {out.register} ADD IF NOT EXISTS PARTITION ({PARTITION} = '{run_date}') "
              f"LOCATION '{location}/{PARTITION}={run_date}'")
    console.say(f"registered {out.register} partition {PARTITION}={run_date}")
    return {"format": "parquet", "name": out.register, "partition": f"{PARTITION}={run_date}", "location": location}
