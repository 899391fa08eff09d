"""What a commit costs on S3: the jobs' write (dynamic partition overwrite of one run_date) to
s3a against a local moto server, for 1, 10 and 100 output files, next to a local folder.

    python -m bench.s3_commit            # writes bench/s3_results/commit_cost.{json,md}

Spark stages the files under `<output>/.spark-staging-<job>/`, then renames them into place.
An s3a rename is a copy and a delete per object, so the job commit grows with the file count.
Per write it records Spark's own timings (FileFormatWriter's job commit and
SparkHadoopMapRedUtil's task commits, from their INFO lines) and the S3 requests the write
made, copies apart. Each write is a new run_date, as each night is; figures are medians of the
repeats. Needs the s3a jars (`make s3a-jars`) and moto.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench import harness
from local_aws import s3a_jars
from local_aws.moto_server import REGION, MotoServer

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "s3_results"
JOB_COMMIT = re.compile(r"Write Job \S+ committed\. Elapsed time: (\d+) ms")
TASK_COMMIT = re.compile(r": Committed\. Elapsed time: (\d+) ms")
LOGGERS = ("org.apache.spark.sql.execution.datasources.FileFormatWriter",
           "org.apache.spark.mapred.SparkHadoopMapRedUtil")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, nargs="+", default=[1, 10, 100])
    p.add_argument("--rows", type=int, default=200_000, help="rows per write, split evenly over the files")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)

    jars = s3a_jars.cached()
    if not jars:
        sys.exit("the s3a jars are missing: run `make s3a-jars` first")
    meta = harness.machine_meta(spark=pyspark_version(), s3a=", ".join(s3a_jars.JARS), moto=moto_version())
    t0 = time.time()
    log = Path(tempfile.mkstemp(prefix="s3-commit-", suffix=".log")[1])
    os.dup2(os.open(log, os.O_WRONLY | os.O_APPEND), 2)  # the JVM started below inherits it
    server = MotoServer().start()
    runs = []
    try:
        spark = start_spark(server.url, jars)
        import boto3

        boto3.client("s3", endpoint_url=server.url, region_name=REGION, aws_access_key_id="bench",
                     aws_secret_access_key="bench").create_bucket(Bucket="bench")
        with tempfile.TemporaryDirectory() as local:
            for files in args.files:
                for target, root in (("s3a", f"s3a://bench/out-{files}"), ("local", f"file://{local}/out-{files}")):
                    for night in range(args.repeats):
                        runs.append(measure(spark, server, log, target, root, files, args.rows, night))
        spark.stop()
    finally:
        server.stop()
    harness.close_meta(meta, t0)
    results = {"meta": meta, "rows_per_write": args.rows, "repeats": args.repeats,
               "summary": summarise(runs), "runs": runs}
    harness.write_results(args.out, "commit_cost", results, markdown)
    sys.stdout.write(markdown(results))
    return 0


def start_spark(endpoint: str, jars):
    spark, _ = harness.start_spark(2, "s3-commit-bench", {
        "spark.jars": s3a_jars.jars_option(jars), "spark.hadoop.fs.s3a.endpoint": endpoint,
        "spark.hadoop.fs.s3a.access.key": "bench", "spark.hadoop.fs.s3a.secret.key": "bench",
        "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"})
    jvm = spark.sparkContext._jvm
    for name in LOGGERS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, jvm.org.apache.logging.log4j.Level.INFO)
    return spark


def measure(spark, server, log: Path, target: str, root: str, files: int, rows: int, night: int) -> dict:
    """One write of `rows` rows in `files` files to a new run_date under `root`, as jobs/spark_io.py writes."""
    from pyspark.sql import functions as F

    from jobs import spark_io

    df = (spark.range(rows, numPartitions=files)
          .select("id", F.sha2(F.col("id").cast("string"), 256).alias("text"),
                  F.lit(f"2026-12-{night + 1:02d}").alias("run_date")))
    df.cache().count()  # the write below measures writing, not generating
    offset = log.stat().st_size
    server.recorder.clear()
    t0 = time.perf_counter()
    spark_io.write_scores(df, root)
    seconds = time.perf_counter() - t0
    df.unpersist()
    with open(log, errors="replace") as f:
        f.seek(offset)
        text = f.read()
    job = [int(ms) for ms in JOB_COMMIT.findall(text)]
    tasks = [int(ms) for ms in TASK_COMMIT.findall(text)]
    if len(job) != 1 or len(tasks) != files:
        raise RuntimeError(f"expected 1 job commit and {files} task commits in Spark's log, found {job} and "
                           f"{len(tasks)}:\n{text[-3000:]}")
    s3_requests = server.recorder.requests if target == "s3a" else []
    return {"target": target, "files": files, "night": night, "write_seconds": round(seconds, 3),
            "job_commit_ms": job[0], "task_commit_ms_sum": sum(tasks),
            "s3_requests": len(s3_requests), "s3_copies": server.recorder.copies if target == "s3a" else 0,
            # s3a deletes one object (DELETE) or many (POST ?delete; these files are too small for multipart POSTs)
            "s3_deletes": sum(1 for method, _ in s3_requests if method in ("DELETE", "POST"))}


def summarise(runs: list[dict]) -> list[dict]:
    rows = []
    for key in sorted({(r["target"], r["files"]) for r in runs}, key=lambda k: (k[1], k[0])):
        same = [r for r in runs if (r["target"], r["files"]) == key]
        row = {"target": key[0], "files": key[1]}
        for field in ("write_seconds", "job_commit_ms", "task_commit_ms_sum", "s3_requests", "s3_copies", "s3_deletes"):
            row[field] = statistics.median(r[field] for r in same)
        rows.append(row)
    return rows


def pyspark_version() -> str:
    import pyspark

    return pyspark.__version__


def moto_version() -> str:
    import moto

    return moto.__version__


def markdown(results: dict) -> str:
    m = results["meta"]
    lines = ["# Commit cost on S3 (s3a against moto) and on a local folder",
             "",
             f"{results['rows_per_write']:,} rows per write, dynamic partition overwrite of one run_date "
             f"(jobs/spark_io.py), median of {results['repeats']} writes. {m['cpu']}, {m['machine_cpus']} cores, load average "
             f"{m['loadavg_start'][0]} at the start; Spark {m['spark']} local[2], {m['s3a']}, moto {m['moto']}, "
             f"{m['started'][:10]}. Produced by `python -m bench.s3_commit`.",
             "",
             "| files | target | write (s) | job commit (ms) | task commits, summed (ms) | S3 requests | copies | delete requests |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results["summary"]:
        s3 = [f"{r[k]:,.0f}" if r["target"] == "s3a" else "–" for k in ("s3_requests", "s3_copies", "s3_deletes")]
        lines.append(f"| {r['files']} | {r['target']} | {r['write_seconds']:.2f} | {r['job_commit_ms']:,.0f} | "
                     f"{r['task_commit_ms_sum']:,.0f} | " + " | ".join(s3) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
