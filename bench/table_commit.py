"""What an Iceberg table costs a run against the Parquet folder: the duplicates job, cold, on the
zero-cost artifact, 100,000 pairs, writing a Parquet folder or an Iceberg table (a Hadoop catalog on
a local folder), alternately, each run a new run_date of the same output as a nightly run is.

    python -m bench.table_commit             # out/bench/results/table_commit.{json,md}
    python -m bench.table_commit --commit    # bench/results/table_commit.{json,md}

The difference of the medians is what the table costs per run: the table's checks and creation
before scoring (in wall time), and the Iceberg write and commit, which are part of the scoring
action (in scoring time). Needs Iceberg's runtime (`make iceberg-jars`).
"""
from __future__ import annotations

import datetime as dt
import statistics
import sys
import time
from pathlib import Path

from bench import harness
from bench.harness import ROOT, generated_input, log, submit
from local_aws import iceberg_jars, pinned_jars

ROWS = 100_000
REPEATS = 3
TABLE = "iceberg:bench.scores.duplicates"
KEPT = ("rows_out", "scoring_seconds", "wall_seconds", "wall_seconds_submit", "rows_per_second", "table",
        "spark_jobs", "exit_code")


def measure(rows: int, repeats: int, work: Path) -> list[dict]:
    from bench import scale

    jars = iceberg_jars.cached()
    if not jars:
        sys.exit("Iceberg's runtime is missing: run `make iceberg-jars` first")
    model = scale.artifacts(work)["duplicates"]
    data = generated_input("pairs", rows, work)
    warehouse, folder = work / "table-commit" / "warehouse", work / "table-commit" / "parquet"
    conf = {"spark.jars": pinned_jars.jars_option(jars), "spark.sql.catalog.bench": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.bench.type": "hadoop", "spark.sql.catalog.bench.warehouse": str(warehouse)}
    runs = []
    for i in range(repeats):
        day = (dt.date(2026, 11, 1) + dt.timedelta(days=i)).isoformat()
        for output in ("parquet", "iceberg"):
            log(f"table_commit: {output} {rows:,} pairs, run_date {day}")
            target = (["--output", TABLE, "--runs-dir", str(work / "table-commit" / "runs")] if output == "iceberg"
                      else ["--output", str(folder)])
            run = submit("duplicates.py", ["--input", str(data), "--model", str(model), "--run-date", day, *target],
                         conf=conf if output == "iceberg" else None, memory=False)
            if run.get("failed"):
                raise SystemExit(f"bench.table_commit: the {output} run failed: {run}")
            runs.append({"output": output, "run_date": day, **{k: run.get(k) for k in KEPT}})
    return runs


def summarise(runs: list[dict]) -> dict:
    medians = {}
    for output in ("parquet", "iceberg"):
        mine = [r for r in runs if r["output"] == output]
        medians[output] = {key: round(statistics.median(r[key] for r in mine), 2)
                           for key in ("scoring_seconds", "wall_seconds", "wall_seconds_submit")}
    extra = {key: round(medians["iceberg"][key] - medians["parquet"][key], 2) for key in medians["parquet"]}
    return {"medians": medians, "iceberg_minus_parquet": extra,
            "iceberg_over_parquet_wall": round(medians["iceberg"]["wall_seconds_submit"]
                                               / medians["parquet"]["wall_seconds_submit"], 3)}


def markdown(results: dict) -> str:
    s, meta = results["summary"], results["meta"]
    lines = [f"# Iceberg table against Parquet folder: {results['rows']:,} pairs, duplicates job, cold",
             "", f"{meta['started']} · {meta['cpu']} · load {meta['loadavg_start']} → {meta['loadavg_end']} · "
             f"{results['repeats']} runs each, alternating, zero-cost artifact, local[2]", "",
             "| output | scoring s (median) | job wall s | spark-submit wall s |", "|---|---|---|---|"]
    for output in ("parquet", "iceberg"):
        m = s["medians"][output]
        lines.append(f"| {output} | {m['scoring_seconds']} | {m['wall_seconds']} | {m['wall_seconds_submit']} |")
    d = s["iceberg_minus_parquet"]
    lines += ["", f"Iceberg minus Parquet: scoring {d['scoring_seconds']:+} s, job wall {d['wall_seconds']:+} s, "
              f"spark-submit wall {d['wall_seconds_submit']:+} s (x{s['iceberg_over_parquet_wall']} of the Parquet run).",
              "", "| output | run_date | scoring s | job wall s | spark-submit wall s | Spark jobs |", "|---|---|---|---|---|---|"]
    for r in results["runs"]:
        lines.append(f"| {r['output']} | {r['run_date']} | {r['scoring_seconds']} | {r['wall_seconds']} | "
                     f"{r['wall_seconds_submit']} | {r['spark_jobs']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = harness.parse_args(argv, "python -m bench.table_commit", __doc__.split("\n\n")[0])
    harness.prepare_environment()
    started = time.time()
    meta = harness.machine_meta(iceberg=", ".join(iceberg_jars.JARS))
    rows = 2_000 if args.quick else ROWS
    runs = measure(rows, 1 if args.quick else REPEATS, args.work)
    harness.close_meta(meta, started)
    results = {"meta": meta, "rows": rows, "repeats": 1 if args.quick else REPEATS, "runs": runs,
               "summary": summarise(runs)}
    for path in harness.write_results(args.out, "table_commit", results, markdown):
        log(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
