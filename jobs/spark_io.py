"""Spark-side reading, column checks, writing and the summary file. Any Hadoop path works:
a local folder, `s3://` on EMR (EMRFS), `s3a://` elsewhere."""
from __future__ import annotations

import dataclasses
import difflib
import json
import os
import random
import sys
import time
import uuid

from py4j.java_gateway import is_instance_of
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs import console, hadoop_files
from udfs.contract import ID_COUNT


class InputError(ValueError):
    """Bad arguments or input: the job exits 2 and writes nothing."""


COMPLEX = (T.StructType, T.ArrayType, T.MapType, T.BinaryType)
PROBE_ATTEMPTS = 5  # check_output's write probe, where a concurrent run removed the folder under it
PROBE_PAUSE_S = 0.02  # the longest random pause before its second try; it grows with each try


def spark_session(app_name: str, master: str | None) -> SparkSession:
    builder = SparkSession.builder.appName(app_name)
    # spark-submit hands its master to the Python driver through the gateway; a plain
    # `python jobs/x.py` has none, so it runs on local[*] unless told otherwise.
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or "local[*]")
        # Local Python workers run this interpreter (the venv's), not whatever `python3` is on PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkConf

    if not SparkConf().contains("spark.ui.showConsoleProgress"):  # the job shows rows, not stages
        builder = builder.config("spark.ui.showConsoleProgress", "false")
    return builder.getOrCreate()


def read_input(spark: SparkSession, path: str, fmt: str) -> DataFrame:
    from pyspark.errors import AnalysisException

    reader = spark.read
    try:
        if fmt == "parquet":
            return reader.parquet(path)
        if fmt == "jsonl":
            return reader.json(path)
        return reader.option("header", True).option("multiLine", True).option("escape", '"').csv(path)
    except AnalysisException as e:
        raise InputError(f"cannot read --input {path} as {fmt}: {first_line(e)}") from None


def absent_fields(df: DataFrame, workload) -> list[str]:
    """The workload's optional columns that the input lacks. A missing required column is an
    InputError; a missing column that looks like an input column gets a hint, in the right
    direction: when a flag typed by the user named it (`--id-column pairid` against the input's
    `pair_id`), the flag is the likely misspelling; otherwise the input's column is, and a
    misspelt optional column (`right_brnad`) would leave `right_brand` empty without a word and
    change the scores, so it gets a `warning:` line."""
    expected = list(dict.fromkeys(workload.required_columns + workload.text_columns))
    missing = [c for c in expected if c not in df.columns]
    flags = workload.flag_columns()
    hints = {}  # missing column -> (the input column it resembles, the sentence that says so)
    for column, match in lookalikes([c for c in df.columns if c not in expected], missing):
        hints[match] = (column, f"{flags[match]} names column {match!r}, which looks like a misspelling of the "
                                f"input's {column!r}" if match in flags else
                        f"input column {column!r} looks like a misspelling of {match!r}, which the input lacks")
    required = [c for c in workload.required_columns if c in missing]
    if required:
        raise InputError(f"input lacks required column(s) {required}; "
                         + "".join(f"{hints[c][1]}; " for c in required if c in hints) + f"it has {sorted(df.columns)}")
    for match, (column, sentence) in hints.items():
        read = f"{match!r} is read as empty text and " if match in flags else ""
        console.say(f"warning: {sentence}; {read}{column!r} is not read")
    return [c for c in workload.optional_columns if c in missing]


def lookalikes(columns: list[str], missing: list[str]) -> list[tuple[str, str]]:
    """(column, the missing column it resembles) pairs: difflib's ratio >= 0.8, ignoring case.
    0.8 takes `right_brnad`/`right_brand` (0.91) and leaves `right_price`/`right_title` (0.73)."""
    by_lower = {m.lower(): m for m in missing}
    pairs = []
    for column in columns:
        close = difflib.get_close_matches(column.lower(), list(by_lower), n=1, cutoff=0.8)
        if close:
            pairs.append((column, by_lower[close[0]]))
    return pairs


def prepare(df: DataFrame, required: list[str], text_columns: list[str], id_column: str) -> DataFrame:
    """Check columns and cast scalar ids/texts to strings.

    Missing required columns and struct/array/map/binary text columns are input errors;
    optional text columns that are absent become nulls (empty text).
    """
    fields = {f.name: f.dataType for f in df.schema.fields}
    missing = [c for c in required if c not in fields]
    if missing:
        raise InputError(f"input lacks required column(s) {missing}; it has {sorted(fields)}")
    wanted = [id_column] + [c for c in text_columns if c != id_column]
    complex_ = [f"{c} ({fields[c].simpleString()})" for c in wanted if c in fields and isinstance(fields[c], COMPLEX)]
    if complex_:
        raise InputError(f"column(s) {complex_} must hold text (string, or a number cast to text)")
    cols = [(F.col(c).cast("string") if c in fields else F.lit(None).cast("string")).alias(c) for c in wanted]
    return df.select(*cols)


@dataclasses.dataclass(frozen=True)
class InputProfile:
    partition_rows: list[int]  # rows of each input partition that holds any
    duplicate_ids: int  # non-null ids that occur more than once

    @property
    def rows(self) -> int:
        return sum(self.partition_rows)


def profile(df: DataFrame, id_column: str) -> InputProfile:
    """Rows per input partition (for Parquet read from the files' footers, like a count) and how
    many ids repeat, in one query (GROUPING SETS): what sizes the tasks and whether rows need
    their id counts at all, without a second pass over the input."""
    view = f"accel_scoring_input_{uuid.uuid4().hex}"
    df.select(F.spark_partition_id().alias("_p"), F.col(id_column).alias("_id")).createOrReplaceTempView(view)
    try:  # grouping_id() is 1 for the (_p) set and 2 for the (_id) set
        rows = df.sparkSession.sql(f"""
            SELECT _g, _p, count(1) AS _groups, sum(_n) AS _rows FROM (
                SELECT _p, _id, count(1) AS _n, grouping_id() AS _g FROM {view} GROUP BY GROUPING SETS ((_p), (_id))
            ) WHERE _g = 1 OR (_n > 1 AND _id IS NOT NULL) GROUP BY _g, _p""").collect()
    finally:
        df.sparkSession.catalog.dropTempView(view)
    return InputProfile([r["_rows"] for r in rows if r["_g"] == 1], sum(r["_groups"] for r in rows if r["_g"] == 2))


def with_id_counts(df: DataFrame, id_column: str, repeats: bool = True) -> DataFrame:
    """Each row's id count where its id repeats (null elsewhere), for udfs/validate.py's
    duplicate_id. Ids rarely repeat, so their counts are broadcast and the input is never
    shuffled; where none repeat (`repeats` False: the input's profile says so) there is nothing
    to count or join."""
    if not repeats:
        return df.withColumn(ID_COUNT, F.lit(None).cast("long"))
    counts = df.groupBy(id_column).count().where(F.col("count") > 1).withColumnRenamed("count", ID_COUNT)
    return df.join(F.broadcast(counts), on=id_column, how="left")


def scoring_input(raw: DataFrame, workload) -> tuple[DataFrame, InputProfile]:
    """`raw` as the scoring stage takes it: the workload's columns as text, each row's id count
    beside it, and the profile that sizes the run (the one Spark job before scoring)."""
    df = prepare(raw, workload.required_columns, workload.text_columns, workload.id_column)
    input_profile = profile(df, workload.id_column)
    return with_id_counts(df, workload.id_column, bool(input_profile.duplicate_ids)), input_profile


def qualified(spark: SparkSession, path: str) -> str:
    """`path` as Hadoop resolves it (scheme-less paths on the default file system, relative ones
    from the working folder); as given where no FileSystem takes it (check_output says why)."""
    try:
        hpath = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(path)
        fs = hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        return str(fs.makeQualified(hpath).toString())
    except Exception:  # noqa: BLE001 - an unsupported scheme or a malformed URI
        return path


def check_output(spark: SparkSession, output: str, flag: str = "--output") -> None:
    """Refuse an --output that Spark could not write, before any task runs: a scheme with no
    Hadoop FileSystem, a file (or a path under one), or a place this user cannot create files in.

    Writability is probed by creating and deleting a file under --output: permission bits cannot
    tell (root, S3 bucket policies). The folders the probe created are removed again, so a job
    refused later (or here) leaves --output as it was.
    """
    jvm = spark.sparkContext._jvm
    try:
        path = jvm.org.apache.hadoop.fs.Path(output)
    except Exception as e:  # noqa: BLE001 - an empty or malformed URI
        raise InputError(f"{flag} {output!r} is not a path: {first_line(e)}") from None
    try:
        fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    except Exception as e:  # noqa: BLE001 - no FileSystem registered, or its class not installed
        raise InputError(f"{flag} {output}: unsupported scheme {path.toUri().getScheme()!r} ({_java_message(e)})") from None
    path = fs.makeQualified(path)
    try:
        absent, node, is_file = _nearest_existing(spark, fs, path)
    except Exception as e:  # noqa: BLE001 - on S3: no such bucket, access denied, endpoint unreachable
        raise InputError(f"{flag} {output} is not reachable: {_java_message(e)}") from None
    if is_file:
        raise InputError(f"{flag} {output} is a file, not a folder" if not absent
                         else f"{flag} {output} is under {node.toString()}, a file, not a folder")
    probe = jvm.org.apache.hadoop.fs.Path(path, f".accel-scoring-write-check-{uuid.uuid4().hex}")
    try:
        _write_probe(fs, probe)
    except Exception as e:  # noqa: BLE001 - permission denied, read-only, bucket policy
        raise InputError(f"{flag} {output} is not writable: {_java_message(e)}") from None
    finally:
        for made in [probe] + absent:
            try:
                fs.delete(made, False)
            except Exception:  # noqa: BLE001 - another run's files arrived in a folder this probe made: keep it
                break


def _nearest_existing(spark: SparkSession, fs, path):
    """(`path` and its parents that do not exist, deepest first; the nearest that does, or None;
    whether that one is a file). One status read per folder: an exists() then a status read
    would fail where a concurrent first run's probe removed the folder between the two."""
    absent, node = [], path
    while node is not None:
        try:
            return absent, node, fs.getFileStatus(node).isFile()
        except Exception as e:  # noqa: BLE001 - re-raised unless it says the path does not exist
            java = getattr(e, "java_exception", None)
            # FileNotFoundException or a subclass: what FileSystem.exists() takes for "does not
            # exist" (s3a's no-such-bucket is another class, and stays an error).
            if java is None or not is_instance_of(spark.sparkContext._gateway, java, "java.io.FileNotFoundException"):
                raise
        absent.append(node)
        node = node.getParent()
    return absent, None, False


def _write_probe(fs, probe) -> None:
    """Create and close `probe`. Two first runs of one new --output at once (two dates in
    parallel): the other run's probe removes the folders it made, which can fall between this
    create's mkdirs, its chmod and its open. That race does not repeat, so each failure is tried
    again after a random pause; a refusal (permission, bucket policy) fails every try and is raised."""
    for attempt in range(1, PROBE_ATTEMPTS + 1):
        try:
            fs.create(probe, False).close()
            return
        except Exception:  # noqa: BLE001 - raised from the last try
            if attempt == PROBE_ATTEMPTS:
                raise
            time.sleep(random.uniform(0, PROBE_PAUSE_S * attempt))


def check_output_owner(spark: SparkSession, output: str, job: str, flag: str = "--output") -> None:
    """Refuse an --output that holds another job's partitions (their run summaries say which
    job wrote them): a run, re-run or back-fill there would replace that job's run_date with
    rows of another schema. A root without summaries is new, or not this project's: left alone."""
    runs = f"{output}/_runs"
    for name in hadoop_files.list_names(spark, runs)[-1:]:  # the newest run date
        try:
            wrote = json.loads(hadoop_files.read_text(spark, f"{runs}/{name}/summary.json")).get("job")
        except Exception:  # noqa: BLE001 - no summary there (a Java FileNotFoundException) or not JSON
            continue
        if wrote and wrote != job:
            raise InputError(f"{flag} {output} holds {wrote}'s output ({runs}/{name}/summary.json): this job "
                             f"({job}) would replace its run_date partitions with rows of another table; give each "
                             f"job its own {flag}")


def _java_message(e: Exception) -> str:
    """The Java exception's message and its causes' (s3a's own names only the path; the SDK's
    cause says why), without py4j's stack trace or S3's request ids."""
    java = getattr(e, "java_exception", None)
    if java is None:
        return first_line(e)
    parts: list[str] = []
    while java is not None and len(parts) < 3:
        text = (java.getMessage() or java.toString()).strip().splitlines()[0].split("; Request ID:")[0]
        if not any(text in part for part in parts):
            parts.append(text)
        java = java.getCause()
    return ": ".join(parts)


def write_scores(df: DataFrame, output: str) -> None:
    """Dynamic partition overwrite: a re-run replaces its own run_date and nothing else."""
    (df.write.mode("overwrite").option("partitionOverwriteMode", "dynamic")
     .partitionBy("run_date").parquet(output))


def summary_path(output: str, run_date: str) -> str:
    return f"{_run_dir(output, run_date)}/summary.json"


def report_path(output: str, run_date: str) -> str:
    return f"{_run_dir(output, run_date)}/report.html"


def _run_dir(output: str, run_date: str) -> str:
    return f"{output}/_runs/run_date={run_date}"


def first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
