"""Spark-side reading, column checks, writing and the summary file. Any Hadoop path works:
a local folder, `s3://` on EMR (EMRFS), `s3a://` elsewhere."""
from __future__ import annotations

import os
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from udfs.workloads import ID_COUNT


class InputError(ValueError):
    """Bad arguments or input: the job exits 2 and writes nothing."""


COMPLEX = (T.StructType, T.ArrayType, T.MapType, T.BinaryType)


def spark_session(app_name: str, master: str | None) -> SparkSession:
    builder = SparkSession.builder.appName(app_name)
    # spark-submit hands its master to the Python driver through the gateway; a plain
    # `python jobs/x.py` has none, so it runs on local[*] unless told otherwise.
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or "local[*]")
        # Local Python workers run this interpreter (the venv's), not whatever `python3` is on PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
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


def prepare(df: DataFrame, required: list[str], text_columns: list[str], id_column: str) -> DataFrame:
    """Check columns, cast scalar ids/texts to strings, and count each id's occurrences.

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
    df = df.select(*cols)
    counts = df.groupBy(id_column).count().where(F.col("count") > 1).withColumnRenamed("count", ID_COUNT)
    # Duplicate ids are rare, so the counts are broadcast and the input is never shuffled.
    return df.join(F.broadcast(counts), on=id_column, how="left")


def write_scores(df: DataFrame, output: str) -> None:
    """Dynamic partition overwrite: a re-run replaces its own run_date and nothing else."""
    (df.write.mode("overwrite").option("partitionOverwriteMode", "dynamic")
     .partitionBy("run_date").parquet(output))


def write_text(spark: SparkSession, path: str, text: str) -> None:
    """Write one small file through Hadoop's FileSystem, so s3:// works as on local disk."""
    jvm = spark.sparkContext._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    stream = fs.create(hpath, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


def summary_path(output: str, run_date: str) -> str:
    return f"{_run_dir(output, run_date)}/summary.json"


def report_path(output: str, run_date: str) -> str:
    return f"{_run_dir(output, run_date)}/report.html"


def _run_dir(output: str, run_date: str) -> str:
    return f"{output}/_runs/run_date={run_date}"


def first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
