"""Exit codes, bad input and re-runs of the jobs (README.md, "The jobs"), on local Spark."""
import pandas as pd
import pytest

from jobs.duplicates import main
from tests.jobhelpers import pairs_frame, read_partition, run_job

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def model(compile_artifact):
    return compile_artifact("pair-classification")


@pytest.fixture
def write(tmp_path):
    def _write(df: pd.DataFrame, name: str = "in.parquet"):
        path = tmp_path / name
        if name.endswith(".jsonl"):
            df.to_json(path, orient="records", lines=True)
        elif name.endswith(".csv"):
            df.to_csv(path, index=False)
        else:
            df.to_parquet(path)
        return path
    return _write


def test_missing_required_column_exits_2_and_writes_nothing(spark, model, write, tmp_path, capsys):
    path = write(pairs_frame(5).drop(columns=["right_title"]))
    rc, summary, err = run_job(main, capsys, input=path, output=tmp_path / "out", model=model)
    assert rc == 2 and summary is None
    assert "lacks required column(s) ['right_title']" in err
    assert not (tmp_path / "out").exists()


def test_struct_typed_text_column_exits_2(spark, model, tmp_path, capsys):
    spark.createDataFrame([("a", ("x", 1), "y")], "pair_id string, left_title struct<a:string,b:int>, right_title string") \
        .write.parquet(str(tmp_path / "in"))
    rc, _, err = run_job(main, capsys, input=tmp_path / "in", output=tmp_path / "out", model=model)
    assert rc == 2 and "left_title (struct<a:string,b:int>)" in err and not (tmp_path / "out").exists()


def test_numeric_ids_and_text_columns_are_scored_as_text(spark, model, write, tmp_path, capsys):
    df = pd.DataFrame({"pair_id": [1, 2, 3], "left_title": [12345, 678, 9], "right_title": [12345.0, 1.5, None]})
    rc, summary, _ = run_job(main, capsys, input=write(df), output=tmp_path / "out", model=model, run_date="2026-03-01",
                             max_invalid_fraction=0.5)
    res = read_partition(tmp_path / "out", "2026-03-01").sort_values("pair_id")
    assert rc == 0 and res.pair_id.tolist() == ["1", "2", "3"]
    assert res.status.tolist() == ["ok", "ok", "invalid_input"]


def test_tampered_artifact_fails_before_any_task(spark, model, artifact_copy, write, tmp_path, capsys):
    bad = artifact_copy(model)
    with open(bad / "model.onnx", "ab") as f:
        f.write(b"\0")
    rc, _, err = run_job(main, capsys, input=write(pairs_frame(5)), output=tmp_path / "out", model=bad)
    assert rc == 2 and "model.onnx: sha256" in err and not (tmp_path / "out").exists()


def test_wrong_task_artifact_and_unreadable_input_exit_2(spark, compile_artifact, model, tmp_path, capsys):
    rc, _, err = run_job(main, capsys, input=tmp_path / "nope.parquet", output=tmp_path / "out", model=model)
    assert rc == 2 and "cannot read --input" in err
    rc, _, err = run_job(main, capsys, input=tmp_path / "nope.parquet", output=tmp_path / "out",
                         model=compile_artifact("text-classification"))
    assert rc == 2 and "is a text-classification artifact" in err
    rc, _, err = run_job(main, capsys, input=tmp_path / "nope.parquet", output=tmp_path / "out", model=tmp_path)
    assert rc == 2 and "manifest.json not found" in err


def test_hugging_face_folder_says_to_compile_it_first(tiny_models, tmp_path, capsys):
    folder = tiny_models["pair-classification"]  # config.json, weights, tokenizer; no manifest.json
    rc, summary, err = run_job(main, capsys, input=tmp_path / "in.parquet", output=tmp_path / "out", model=folder)
    assert rc == 2 and summary is None
    assert err.splitlines() == [
        f"error: --model {folder}: a Hugging Face model folder (config.json, no manifest.json), not an artifact; "
        f"compile it first: python -m compiler --model {folder} "
        f"--task {{pair-classification,text-classification,embedding}} --out artifacts/{folder.name}"]
    assert not (tmp_path / "out").exists()


def test_bad_flag_values_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--input", "x", "--output", "y", "--model", "z", "--run-date", "29/11/2026"])
    assert e.value.code == 2 and "argument --run-date: must be YYYY-MM-DD" in capsys.readouterr().err


def test_invalid_fraction_gate_exits_1_after_writing_everything(spark, model, write, tmp_path, capsys):
    df = pairs_frame(20)
    df.loc[:4, "left_title"] = None
    df.loc[:4, "left_brand"] = None
    df.loc[:4, "left_description"] = None
    path = write(df)
    rc, summary, err = run_job(main, capsys, input=path, output=tmp_path / "out", model=model, run_date="2026-03-02",
                               max_invalid_fraction=0.2)
    assert rc == 1 and "25.00% > --max-invalid-fraction 20.00%" in err
    assert len(read_partition(tmp_path / "out", "2026-03-02")) == 20 and summary["invalid"] == 5
    # The summary and the page say the run failed, and why, as the exit code does.
    assert summary["exit_code"] == 1 and "25.00% > --max-invalid-fraction 20.00%" in summary["failure"]
    page = (tmp_path / "out" / "_runs" / "run_date=2026-03-02" / "report.html").read_text()
    assert 'id="outcome" class="failed">failed, exit 1: 5 of 20 rows invalid or failed (25.00% &gt;' in page
    rc, summary, _ = run_job(main, capsys, input=path, output=tmp_path / "out", model=model, run_date="2026-03-02",
                             max_invalid_fraction=0.25)
    assert rc == 0 and summary["exit_code"] == 0 and summary["failure"] is None


def test_rerun_replaces_only_its_date(spark, model, write, tmp_path, capsys):
    out = tmp_path / "out"
    first, second = write(pairs_frame(30, seed=1), "a.parquet"), write(pairs_frame(12, seed=2), "b.parquet")
    assert run_job(main, capsys, input=first, output=out, model=model, run_date="2026-04-01")[0] == 0
    assert run_job(main, capsys, input=second, output=out, model=model, run_date="2026-04-02")[0] == 0
    day1 = read_partition(out, "2026-04-01").sort_values("pair_id", ignore_index=True)
    day2 = read_partition(out, "2026-04-02").sort_values("pair_id", ignore_index=True)
    assert run_job(main, capsys, input=first, output=out, model=model, run_date="2026-04-01")[0] == 0
    again = read_partition(out, "2026-04-01").sort_values("pair_id", ignore_index=True)
    pd.testing.assert_frame_equal(day1, again)
    pd.testing.assert_frame_equal(day2, read_partition(out, "2026-04-02").sort_values("pair_id", ignore_index=True))
    assert len(day1) == 30 and len(day2) == 12
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("run_date=")) == ["run_date=2026-04-01", "run_date=2026-04-02"]


def test_another_jobs_output_is_refused_and_left_as_it_was(spark, model, compile_artifact, write, tmp_path, capsys):
    """A back-fill of the intent job pointed at the duplicates' output would replace their date."""
    from jobs import query_intent

    out = tmp_path / "out"
    assert run_job(main, capsys, input=write(pairs_frame(12)), output=out, model=model, run_date="2026-04-01")[0] == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    intent = compile_artifact("text-classification")
    capsys.readouterr()
    rc, summary, err = run_job(query_intent.main, capsys, input=tmp_path / "never-read.parquet", output=out,
                               model=intent, run_date="2026-04-01")
    assert rc == 2 and summary is None and err.count("\n") == 1, err
    assert err.startswith(f"error: --output {out} holds accel-scoring-duplicates's output"), err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("name", ["in.jsonl", "in.csv"])
def test_jsonl_and_csv_inputs_with_absent_optional_fields(spark, model, write, tmp_path, capsys, name):
    df = pairs_frame(10)[["pair_id", "left_title", "right_title", "left_description"]]
    df.loc[3, "left_description"] = 'has "quotes", commas\nand a newline'
    rc, summary, err = run_job(main, capsys, input=write(df, name), output=tmp_path / "out", model=model, run_date="2026-05-01")
    res = read_partition(tmp_path / "out", "2026-05-01")
    assert rc == 0 and len(res) == 10 and (res.status == "ok").all()
    assert summary["fields_absent"] == ["left_brand", "right_brand", "right_description"] and "warning:" not in err


def test_torch_backend_end_to_end(spark, compile_artifact, write, tmp_path, capsys):
    ts = compile_artifact("pair-classification", "torch")
    rc, summary, _ = run_job(main, capsys, input=write(pairs_frame(15)), output=tmp_path / "t", model=ts, backend="torch",
                             run_date="2026-06-01")
    assert rc == 0 and summary["backend"] == "torch" and summary["ok"] == 15


def test_corrupt_input_file_exits_2_with_a_message(spark, model, tmp_path, capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "part-0.parquet").write_bytes(b"not parquet at all")
    rc, _, err = run_job(main, capsys, input=tmp_path / "in", output=tmp_path / "out", model=model)
    assert rc == 2 and "cannot read --input" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_device_that_does_not_fit_the_backend_exits_2(spark, model, tmp_path, capsys):
    rc, _, err = run_job(main, capsys, input=tmp_path / "x", output=tmp_path / "out", model=model, backend="onnx",
                         device="tpu:0")
    assert rc == 2 and "--device must be cpu, cuda:N or neuron:N" in err
