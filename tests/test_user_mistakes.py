"""The mistakes a new user makes first (issue #19): each gets one `error:` line, the documented
exit code (2, bad arguments or input), no traceback, and nothing written under --output."""
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest

from jobs.duplicates import main
from jobs.spark_io import check_output, lookalikes
from tests.jobhelpers import pairs_frame, read_partition, run_job


@pytest.fixture(scope="module")
def model(compile_artifact):
    return compile_artifact("pair-classification")


def _snapshot(path: Path) -> dict | None:
    """Every file under path (or path itself) with its bytes; None when nothing is there."""
    if not path.exists():
        return None
    if path.is_file():
        return {".": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() if p.is_file() else None for p in path.rglob("*")}


def _input(tmp_path: Path, renames: dict | None = None) -> Path:
    path = tmp_path / "in.parquet"
    pairs_frame(8).rename(columns=renames or {}).to_parquet(path)
    return path


def _missing_required_column(tmp_path, model, tiny_models):
    flags = dict(input=_input(tmp_path, {"right_title": "right_titel"}), model=model)
    return flags, "input lacks required column(s) ['right_title']"


def _optional_field_typo(tmp_path, model, tiny_models):
    flags = dict(input=_input(tmp_path, {"right_brand": "right_brnad"}), model=model, strict_fields=True)
    return flags, "input lacks required column(s) ['right_brand']"


def _hugging_face_folder_as_model(tmp_path, model, tiny_models):
    return dict(input=_input(tmp_path), model=tiny_models["pair-classification"]), "compile it first: python -m compiler --model"


def _odd_run_date(tmp_path, model, tiny_models):
    return dict(input=_input(tmp_path), model=model, run_date="20261129"), "argument --run-date: must be YYYY-MM-DD, got '20261129'"


def _id_column_typo(tmp_path, model, tiny_models):
    """The flag is the misspelling, not the input's column (issue #25: the warning had it backwards)."""
    return (dict(input=_input(tmp_path), model=model, id_column="pairid"),
            "--id-column pairid names column 'pairid', which looks like a misspelling of the input's 'pair_id'")


def _file_as_output(tmp_path, model, tiny_models):
    (tmp_path / "scores.parquet").write_bytes(b"an existing file")
    return dict(input=_input(tmp_path), model=model, output=tmp_path / "scores.parquet"), "is a file, not a folder"


@pytest.mark.spark
@pytest.mark.parametrize("mistake", [
    _missing_required_column,
    _optional_field_typo,
    _hugging_face_folder_as_model,
    _odd_run_date,
    _id_column_typo,
    _file_as_output,
], ids=lambda f: f.__name__.strip("_"))
def test_each_first_mistake_gets_one_error_line_exit_2_and_writes_nothing(spark, model, tiny_models, tmp_path,
                                                                          capsys, mistake):
    flags, message = mistake(tmp_path, model, tiny_models)
    flags.setdefault("output", tmp_path / "out")
    before = _snapshot(Path(flags["output"]))
    rc, summary, err = run_job(main, capsys, **flags)
    errors = [line for line in err.splitlines() if "error:" in line]
    assert rc == 2 and summary is None, err
    assert len(errors) == 1 and message in errors[0] and "Traceback" not in err, err
    assert "warning:" not in err, err  # the error line says it all, a hint included
    assert _snapshot(Path(flags["output"])) == before


@pytest.mark.spark
def test_a_misspelt_field_column_is_named_in_a_warning_and_the_field_listed_as_absent(spark, model, tmp_path, capsys):
    rc, summary, err = run_job(main, capsys, input=_input(tmp_path, {"right_brand": "right_brnad"}),
                               output=tmp_path / "out", model=model, run_date="2026-07-01")
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert rc == 0 and summary["fields_absent"] == ["right_brand"]
    assert warnings == ["warning: input column 'right_brnad' looks like a misspelling of 'right_brand', "
                        "which the input lacks; 'right_brnad' is not read"]
    assert any(line.startswith("scoring ") and line.endswith("; fields_absent: right_brand") for line in err.splitlines())
    assert len(read_partition(tmp_path / "out", "2026-07-01")) == 8
    assert not list((tmp_path / "out").glob("*write-check*"))  # the writability probe leaves nothing


@pytest.mark.spark
@pytest.mark.parametrize("output, message", [
    ("{tmp}/a-file/out", "is under file:{tmp}/a-file, a file, not a folder"),
    ("/proc/accel-scoring-out", "is not writable: "),  # not even root may create files there
    ("nofs://bucket/out", "unsupported scheme 'nofs' (No FileSystem for scheme \"nofs\")"),
])
def test_outputs_spark_cannot_write_exit_2_before_the_input_is_read(spark, model, tmp_path, capsys, output, message):
    (tmp_path / "a-file").write_text("x")
    output, message = output.format(tmp=tmp_path), message.format(tmp=tmp_path)
    rc, _, err = run_job(main, capsys, input=tmp_path / "never-read.parquet", output=output, model=model)
    assert rc == 2 and len(err.splitlines()) == 1 and err.startswith(f"error: --output {output}") and message in err, err
    assert (tmp_path / "a-file").read_text() == "x"


@pytest.mark.spark
def test_first_runs_of_one_new_output_at_once_are_not_refused(spark, tmp_path):
    """Two run dates started together on one new --output: each run's probe makes and removes the
    folders the other run is looking at, and neither may take that for a refusal."""
    def check(round_):
        check_output(spark, str(tmp_path / f"round-{round_ // 4}" / "out"))

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(check, range(4 * 30)))
    # Only empty folders may stay, where one run's probe was inside a folder another run made.
    assert not [p for p in tmp_path.rglob("*") if not p.is_dir()], "the probes leave no file behind"


@pytest.mark.parametrize("text", ["20261129", "2026-W48-7", "2026-1-5", "2026-02-30", "11/29/2026"])
def test_run_date_is_exactly_yyyy_mm_dd(capsys, text):
    with pytest.raises(SystemExit) as e:
        main(["--input", "x", "--output", "y", "--model", "z", "--run-date", text])
    assert e.value.code == 2 and f"argument --run-date: must be YYYY-MM-DD, got {text!r}" in capsys.readouterr().err


def test_lookalikes_pair_typos_with_the_missing_column_and_leave_other_columns_alone():
    missing = ["right_brand", "left_description"]
    columns = ["right_brnad", "Left_Descripton", "right_price", "label", "left_desc"]
    assert lookalikes(columns, missing) == [("right_brnad", "right_brand"), ("Left_Descripton", "left_description")]


def _folder_input(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pairs_frame(8).to_parquet(folder / "part-0.parquet")
    return folder


@pytest.mark.spark
@pytest.mark.parametrize("layout", [
    # (flags relative to tmp_path, the folder whose bytes must not change, message)
    ({"input": "pairsdir", "output": "pairsdir/scores"}, "pairsdir", "--output {tmp}/pairsdir/scores is inside --input"),
    ({"input": "scores/run_date=2026-07-01", "output": "scores"}, "scores", "--input {tmp}/scores/run_date=2026-07-01 "
                                                                             "is inside --output {tmp}/scores"),
    ({"input": "pairsdir", "output": "pairsdir/"}, "pairsdir", "--input and --output are the same folder"),
    ({"input": "pairsdir", "output": "out", "cache": "pairsdir/cache"}, "pairsdir", "--cache {tmp}/pairsdir/cache "
                                                                                    "is inside --input"),
    ({"input": "pairsdir", "output": "link-to-pairsdir/scores"}, "pairsdir", "is inside --input"),
], ids=["output-in-input", "input-in-output-date", "same-folder", "cache-in-input", "through-a-symlink"])
def test_folders_that_overlap_exit_2_and_leave_the_input_as_it_was(spark, model, tmp_path, capsys, layout):
    flags, kept, message = layout
    _folder_input(tmp_path / flags["input"])
    (tmp_path / "link-to-pairsdir").symlink_to(tmp_path / "pairsdir", target_is_directory=True)
    before = _snapshot(tmp_path / kept)
    rc, summary, err = run_job(main, capsys, model=model, run_date="2026-07-01",
                               **{flag: tmp_path / path for flag, path in flags.items()})
    assert rc == 2 and summary is None and err.count("\n") == 1, err
    assert err.startswith("error: ") and message.format(tmp=tmp_path) in err, err
    assert _snapshot(tmp_path / kept) == before  # nothing written, not even the writability probe
    assert len(pd.read_parquet(tmp_path / flags["input"])) == 8  # and the next run can read it


def test_overlap_is_judged_by_location_across_s3_schemes_and_globs():
    from jobs.paths import clash

    assert clash({"--input": "s3://b/pairs", "--output": "s3a://b/pairs/scores/"}) == \
        "--output s3a://b/pairs/scores/ is inside --input s3://b/pairs"
    assert clash({"--input": "s3a://b/pairs/*.parquet", "--output": "s3://b/pairs/"}) == \
        "--input and --output are the same folder (s3a://b/pairs/*.parquet)"
    assert clash({"--input": "s3://b/pairs", "--output": "s3://b/pairs-scores", "--cache": "s3://other/pairs"}) is None
    assert clash({"--input": "s3://b/pairs", "--output": "s3://c/pairs", "--cache": None}) is None


@pytest.mark.parametrize("command", [["jobs/duplicates.py", "--help"], ["jobs/query_intent.py", "--input", "x"],
                                     ["-m", "jobs.result_cache", "stats", "x"]])
def test_a_python_without_the_project_packages_says_to_use_the_venv_in_one_line(command):
    """Issue #25: `python3 jobs/duplicates.py` outside the venv printed a 14-line traceback ending in
    `ModuleNotFoundError: No module named 'numpy'`. `-S`: this Python without its site-packages."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-S", *command], cwd=repo, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: {sys.executable} cannot import ") and "which accel-scoring needs" in done.stderr
    assert f".venv/bin/python {' '.join(command[:2] if command[0] == '-m' else command[:1])} …" in done.stderr
