"""Output tables (jobs/tables.py, README.md "Output tables"): Iceberg tables in a Hadoop catalog on a
local folder, read back by pyiceberg (no Spark) snapshot by snapshot; the refusals; a SIGKILLed
spark-submit mid-write; and Parquet registered in Spark's Hive catalog (a Derby metastore)."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from jobs import duplicates, embed_texts, query_intent
from local_aws import iceberg_jars, pinned_jars
from tests.jobhelpers import pairs_frame, run_job
from tests.standalone import REPO, submit
from udfs import faults

pytestmark = pytest.mark.spark

DAY1, DAY2 = "2026-11-01", "2026-11-02"


def require_iceberg(spark) -> None:
    """Skip, saying why, where this Spark cannot run the Iceberg runtime or lacks it."""
    if iceberg_jars.unusable_reason():
        pytest.skip(f"Iceberg: {iceberg_jars.unusable_reason()}")
    if not spark.sparkContext._jvm.org.apache.spark.util.Utils.classIsLoadable("org.apache.iceberg.spark.SparkCatalog"):
        pytest.skip("Iceberg's Spark runtime is not on the test session's classpath: run `make iceberg-jars` first")


@pytest.fixture(scope="module")
def iceberg(spark):
    require_iceberg(spark)
    return spark


def hadoop_catalog(spark, name: str, warehouse: str) -> dict:
    """A Hadoop catalog `name` on `warehouse`, set on the running session (catalogs load on first
    use): the settings, as spark-submit's --conf would give them."""
    conf = {f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{name}.type": "hadoop", f"spark.sql.catalog.{name}.warehouse": warehouse}
    for key, value in conf.items():
        spark.conf.set(key, value)
    return conf


def static_table(metadata: Path | str, version_hint: str | None = None, **properties):
    """The table as pyiceberg reads it from its newest metadata file (named by the Hadoop catalog's
    version-hint.text; read here unless given), independently of Spark."""
    from pyiceberg.table import StaticTable

    version = (version_hint or Path(metadata, "version-hint.text").read_text()).strip()
    return StaticTable.from_metadata(f"{metadata}/v{version}.metadata.json", properties=properties)


def ids_by_date(table, snapshot_id: int) -> dict[str, list[str]]:
    """Each run_date's ids in one snapshot, sorted, duplicates kept (so a doubled row shows)."""
    frame = table.scan(snapshot_id=snapshot_id).to_pandas()
    id_column = frame.columns[0]
    return {day: sorted(group[id_column]) for day, group in frame.groupby("run_date")}


def data_files(table, snapshot_id: int, day: str) -> set[str]:
    from pyiceberg.expressions import EqualTo

    return {task.file.file_path for task in table.scan(snapshot_id=snapshot_id, row_filter=EqualTo("run_date", day)).plan_files()}


@pytest.fixture(scope="module")
def model(compile_artifact):
    return compile_artifact("embedding")


def test_first_run_creates_the_table_a_date_appends_and_a_rerun_replaces_only_its_date(iceberg, model, tmp_path,
                                                                                      capsys):
    warehouse = tmp_path / "warehouse"
    hadoop_catalog(iceberg, "lake", str(warehouse))
    v1, v2 = tmp_path / "v1.parquet", tmp_path / "v2.parquet"
    pairs_frame(40, seed=1).to_parquet(v1)
    pairs_frame(30, seed=2).assign(pair_id=lambda d: "v2-" + d.pair_id).to_parquet(v2)
    ids1, ids2 = sorted(pd.read_parquet(v1).pair_id), sorted(pd.read_parquet(v2).pair_id)
    flags = dict(output="iceberg:lake.scores.duplicates", runs_dir=tmp_path / "runs", model=model,
                 cache=tmp_path / "cache")
    snapshots = {}
    for name, source, day in (("day1", v1, DAY1), ("day2", v1, DAY2), ("rerun", v2, DAY1)):
        rc, summary, err = run_job(duplicates.main, capsys, input=source, run_date=day, **flags)
        assert rc == 0, err
        table = summary["table"]
        assert table["format"] == "iceberg" and table["name"] == "lake.scores.duplicates", table
        assert summary["written_to"] == f"iceberg:lake.scores.duplicates run_date={day}"
        assert f"snapshot {table['snapshot_id']}" in err  # the text summary names the commit
        stored = json.loads((tmp_path / "runs" / "_runs" / f"run_date={day}" / "summary.json").read_text())
        assert stored["table"] == table and stored["cache"]["path"] == str(tmp_path / "cache")
        assert str(table["snapshot_id"]) in (tmp_path / "runs" / "_runs" / f"run_date={day}" / "report.html").read_text()
        snapshots[name] = table
    assert snapshots["day2"]["parent_snapshot_id"] == snapshots["day1"]["snapshot_id"]
    assert snapshots["rerun"]["parent_snapshot_id"] == snapshots["day2"]["snapshot_id"]
    assert (snapshots["rerun"]["added_records"], snapshots["rerun"]["deleted_records"]) == (30, 40)
    assert not list((tmp_path / "runs").rglob("leases/*"))  # each run let go of its date

    table = static_table(warehouse / "scores" / "duplicates" / "metadata")
    assert [f.name for f in table.spec().fields] == ["run_date"]
    assert table.metadata.current_snapshot_id == snapshots["rerun"]["snapshot_id"]
    assert ids_by_date(table, snapshots["day1"]["snapshot_id"]) == {DAY1: ids1}
    assert ids_by_date(table, snapshots["day2"]["snapshot_id"]) == {DAY1: ids1, DAY2: ids1}
    assert ids_by_date(table, snapshots["rerun"]["snapshot_id"]) == {DAY1: ids2, DAY2: ids1}
    # the re-run of DAY1 left DAY2's data files as they were, and replaced all of DAY1's
    assert data_files(table, snapshots["rerun"]["snapshot_id"], DAY2) == data_files(table, snapshots["day2"]["snapshot_id"], DAY2)
    assert not data_files(table, snapshots["rerun"]["snapshot_id"], DAY1) & data_files(table, snapshots["day2"]["snapshot_id"], DAY1)
    # the rows Spark reads are the job's columns, as the Parquet output has them
    rows = iceberg.table("lake.scores.duplicates").where(f"run_date = '{DAY1}'").toPandas()
    assert sorted(rows.pair_id) == ids2 and set(rows.status) == {"ok"} and rows.score.notna().all()


@pytest.mark.parametrize("job", ["query_intent", "embed_texts"])
def test_the_other_jobs_write_their_own_tables(iceberg, compile_artifact, job, tmp_path, capsys):
    main, task, id_column, text_column = {
        "query_intent": (query_intent.main, "text-classification", "query_id", "query"),
        "embed_texts": (embed_texts.main, "embedding", "id", "text")}[job]
    warehouse = tmp_path / "warehouse"
    hadoop_catalog(iceberg, f"lake_{job}", str(warehouse))
    source = tmp_path / "in.parquet"
    pd.DataFrame({id_column: [f"q{i}" for i in range(12)],
                  text_column: [f"where is my order {i % 3}" for i in range(12)]}).to_parquet(source)
    rc, summary, err = run_job(main, capsys, input=source, output=f"iceberg:lake_{job}.scores.{job}",
                               runs_dir=tmp_path / "runs", model=compile_artifact(task), run_date=DAY1)
    assert rc == 0, err
    table = static_table(warehouse / "scores" / job / "metadata")
    assert ids_by_date(table, summary["table"]["snapshot_id"]) == {DAY1: [f"q{i}" for i in sorted(range(12), key=str)]}
    frame = table.scan().to_pandas()
    if job == "query_intent":
        assert frame.top_k.map(len).min() >= 1 and frame.intent.notna().all()
    else:
        assert (frame.dim == frame.embedding.map(len)).all()


def test_bad_names_a_missing_catalog_and_mismatched_tables_exit_2_and_write_nothing(iceberg, model, tmp_path, capsys):
    warehouse = tmp_path / "warehouse"
    hadoop_catalog(iceberg, "strict", str(warehouse))
    source = tmp_path / "in.parquet"
    pairs_frame(8).to_parquet(source)
    iceberg.sql("CREATE TABLE strict.scores.typed (pair_id string, score string, is_duplicate boolean, model string, "
                "status string, error string, truncated boolean, run_date string) USING iceberg PARTITIONED BY (run_date)")
    iceberg.sql("CREATE TABLE strict.scores.unpartitioned (pair_id string, score double, is_duplicate boolean, "
                "model string, status string, error string, truncated boolean, run_date string) USING iceberg")
    before = sorted(p.relative_to(warehouse) for p in warehouse.rglob("*"))
    runs = tmp_path / "runs"
    cases = {
        "iceberg:strict.typed": "an Iceberg table is iceberg:<catalog>.<namespace>.<table>",
        "iceberg:strict.scores.bad-name": "an Iceberg table is iceberg:<catalog>.<namespace>.<table>",
        "iceberg:nowhere.scores.t": "no catalog 'nowhere' is configured (spark.sql.catalog.nowhere)",
        "iceberg:strict.scores.typed": "has column score as string, and this job writes double",
        "iceberg:strict.scores.unpartitioned": "is partitioned by nothing, not by run_date alone",
    }
    for output, expected in cases.items():
        rc, summary, err = run_job(duplicates.main, capsys, input=source, output=output, runs_dir=runs, model=model)
        assert rc == 2 and summary is None and len(err.strip().splitlines()) == 1, (output, err)
        assert err.startswith("error: ") and expected in err, (output, err)
    rc, _, err = run_job(duplicates.main, capsys, input=source, output="iceberg:strict.scores.fresh", model=model)
    assert rc == 2 and "give --runs-dir <folder>" in err, err
    rc, _, err = run_job(duplicates.main, capsys, input=source, output=tmp_path / "folder", runs_dir=runs, model=model)
    assert rc == 2 and "--runs-dir is for a table --output" in err, err
    rc, _, err = run_job(duplicates.main, capsys, input=source, output=tmp_path / "folder", model=model,
                         register_table="db.t")
    assert rc == 2 and "needs Spark's Hive catalog" in err, err
    assert sorted(p.relative_to(warehouse) for p in warehouse.rglob("*")) == before  # no table made or changed
    assert not runs.exists() and not (tmp_path / "folder").exists()
    # the intent job's table is not the duplicates job's
    rc, _, err = run_job(query_intent.main, capsys, input=source, output="iceberg:strict.scores.typed", runs_dir=runs,
                         model=model, id_column="pair_id", text_column="left_title")
    assert rc == 2 and len(err.strip().splitlines()) == 1, err


def test_a_killed_write_leaves_the_previous_snapshot_and_the_rerun_completes_it(iceberg, model, tmp_path, capsys):
    """spark-submit writes DAY1 from v2 over v1's rows and is SIGKILLed once two of its four tasks
    have written their data files (the fourth stalls): the table stays at v1's snapshot, readers
    see exactly v1, and the re-run (taking over the killed run's lease) commits exactly v2."""
    warehouse, runs = tmp_path / "warehouse", tmp_path / "runs"
    conf = hadoop_catalog(iceberg, "killed", str(warehouse))
    v1, v2 = tmp_path / "v1.parquet", tmp_path / "v2.parquet"
    pairs_frame(40, seed=3).to_parquet(v1)
    pairs_frame(80, seed=4).assign(pair_id=lambda d: "v2-" + d.pair_id).to_parquet(v2)
    args = ["--output", "iceberg:killed.scores.duplicates", "--runs-dir", runs, "--model", model, "--run-date", DAY1,
            "--num-partitions", 4, "--dedup", "batch"]
    rc, first, err = run_job(duplicates.main, capsys, input=v1, output="iceberg:killed.scores.duplicates",
                             runs_dir=runs, model=model, run_date=DAY1)
    assert rc == 0, err
    data = warehouse / "scores" / "duplicates" / "data" / f"run_date={DAY1}"
    before = set(data.iterdir())

    def kill_once_two_tasks_have_written(proc):
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline:
            if len(set(data.iterdir()) - before) >= 2:  # partitions 0 and 1; partition 3 stalls
                return  # submit() SIGKILLs the driver, its JVM and the Python workers when this returns
            time.sleep(0.2)
        raise AssertionError(f"no task wrote its data file (driver exit {proc.poll()})")

    killed = submit("jobs/duplicates.py", ["--input", v2, *args], master="local[2]",
                    conf={**conf, "spark.jars": pinned_jars.jars_option(iceberg_jars.cached())},
                    env={faults.ENV: "stall:3"}, log_dir=tmp_path, name="killed",
                    on_start=kill_once_two_tasks_have_written, kill_on_return=True)
    assert killed.rc < 0 and killed.summary is None, killed.stderr[-3000:]
    table = static_table(warehouse / "scores" / "duplicates" / "metadata")
    assert table.metadata.current_snapshot_id == first["table"]["snapshot_id"]  # no commit, no partial date
    assert ids_by_date(table, table.metadata.current_snapshot_id) == {DAY1: sorted(pd.read_parquet(v1).pair_id)}

    rc, rerun, err = run_job(duplicates.main, capsys, input=v2, output="iceberg:killed.scores.duplicates",
                             runs_dir=runs, model=model, run_date=DAY1, take_over_run=True)
    assert rc == 0, err
    table = static_table(warehouse / "scores" / "duplicates" / "metadata")
    assert rerun["table"]["parent_snapshot_id"] == first["table"]["snapshot_id"]
    assert ids_by_date(table, table.metadata.current_snapshot_id) == {DAY1: sorted(pd.read_parquet(v2).pair_id)}


REGISTER_SCRIPT = """
import json, sys
from pyspark.sql import SparkSession
root = sys.argv[1]
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.catalogImplementation", "hive").config("spark.sql.warehouse.dir", root + "/warehouse")
         .config("spark.hadoop.javax.jdo.option.ConnectionURL", f"jdbc:derby:;databaseName={root}/metastore_db;create=true")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
from jobs import duplicates
runs = []
for source, day in ((root + "/v1.parquet", "2026-11-01"), (root + "/v1.parquet", "2026-11-02"), (root + "/v2.parquet", "2026-11-01")):
    runs.append(duplicates.main(["--input", source, "--output", root + "/out", "--model", sys.argv[2], "--run-date", day,
                                 "--register-table", "scores.duplicates", "--progress-seconds", "3600"]))
# a date of no rows, registered: an empty partition
runs.append(duplicates.main(["--input", root + "/empty.parquet", "--output", root + "/out", "--model", sys.argv[2],
                             "--run-date", "2026-11-04", "--register-table", "scores.duplicates",
                             "--progress-seconds", "3600"]))
# a date written without --register-table: in the folder, not yet in the table
runs.append(duplicates.main(["--input", root + "/v1.parquet", "--output", root + "/out", "--model", sys.argv[2],
                             "--run-date", "2026-11-03", "--progress-seconds", "3600"]))
# a table over another folder, and a second job's output: refused
runs.append(duplicates.main(["--input", root + "/v1.parquet", "--output", root + "/other", "--model", sys.argv[2],
                             "--register-table", "scores.duplicates", "--progress-seconds", "3600"]))
spark.catalog.clearCache()
rows = spark.sql("SELECT run_date, pair_id FROM scores.duplicates").toPandas()
print("RESULT " + json.dumps({
    "rc": runs, "partitions": [r[0] for r in spark.sql("SHOW PARTITIONS scores.duplicates").collect()],
    "ids": {d: sorted(g.pair_id) for d, g in rows.groupby("run_date")}}))
"""


def test_parquet_output_registered_in_the_hive_catalog(model, tmp_path):
    """--register-table against Spark's Hive catalog on a Derby metastore (in its own process:
    the catalog is fixed when a session starts): the table is created once over the folder, each
    run adds its date, a re-run's date is replaced in place, and a table over another folder is refused."""
    v1, v2 = pairs_frame(20, seed=5), pairs_frame(12, seed=6).assign(pair_id=lambda d: "v2-" + d.pair_id)
    v1.to_parquet(tmp_path / "v1.parquet")
    v2.to_parquet(tmp_path / "v2.parquet")
    v1.iloc[:0].to_parquet(tmp_path / "empty.parquet")
    proc = subprocess.run([sys.executable, "-c", REGISTER_SCRIPT, str(tmp_path), str(model)], cwd=tmp_path,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(Path.home()),
                               "PYSPARK_PYTHON": sys.executable}, capture_output=True, text=True, timeout=600)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["rc"] == [0, 0, 0, 0, 0, 2], proc.stderr[-3000:]
    assert result["partitions"] == ["run_date=2026-11-01", "run_date=2026-11-02", "run_date=2026-11-04"]
    assert result["ids"] == {"2026-11-01": sorted(v2.pair_id), "2026-11-02": sorted(v1.pair_id)}
    assert "--register-table scores.duplicates is the table over" in proc.stderr
    assert "registered scores.duplicates partition run_date=2026-11-02" in proc.stderr


def test_a_rerun_of_no_rows_leaves_the_date_empty_where_it_said_so(spark, model, tmp_path, capsys):
    """A date re-run from an empty input (no pairs that night) writes 0 rows, says so, and readers
    then see none: dynamic partition overwrite alone would have left the first run's rows."""
    pairs_frame(10).to_parquet(tmp_path / "v1.parquet")
    pairs_frame(10).iloc[:0].to_parquet(tmp_path / "empty.parquet")
    out = tmp_path / "out"
    for source, rows in (("v1.parquet", 10), ("empty.parquet", 0)):
        rc, summary, err = run_job(duplicates.main, capsys, input=tmp_path / source, output=out, model=model,
                                   run_date=DAY1)
        assert rc == 0 and summary["rows_out"] == rows, err
    assert "no rows for run_date=2026-11-01" in err
    assert not list((out / f"run_date={DAY1}").iterdir())  # no file left for a reader of the folder


def test_an_iceberg_rerun_of_no_rows_empties_its_date_in_one_commit(iceberg, model, tmp_path, capsys):
    hadoop_catalog(iceberg, "emptied", str(tmp_path / "warehouse"))
    pairs_frame(10).to_parquet(tmp_path / "v1.parquet")
    pairs_frame(10).iloc[:0].to_parquet(tmp_path / "empty.parquet")
    flags = dict(output="iceberg:emptied.scores.duplicates", runs_dir=tmp_path / "runs", model=model, run_date=DAY1)
    for source in ("v1.parquet", "empty.parquet"):
        rc, summary, err = run_job(duplicates.main, capsys, input=tmp_path / source, **flags)
        assert rc == 0, err
    assert (summary["table"]["added_records"], summary["table"]["deleted_records"]) == (0, 10)
    table = static_table(tmp_path / "warehouse" / "scores" / "duplicates" / "metadata")
    assert ids_by_date(table, table.metadata.current_snapshot_id) == {}
