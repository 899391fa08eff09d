"""int8 artifacts are gated on the CPU instruction set they run on (issue #17): the feature probe,
the gate re-run by the ONNX Runtime engine on a CPU unlike the compile's, its refusal, and how a
job surfaces it (every row marked, exit 1) or falls back to `--fallback-model`."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from compiler import compile as compile_cli
from compiler import onnx_optimize
from engines import hardware, parity
from engines.artifact import MANIFEST, sha256_file
from engines.errors import ParityError
from engines.onnxruntime_cpu import OnnxRuntimeEngine, features_text
from engines.store import open_artifact
from tests.jobhelpers import pairs_frame, read_partition, run_job

CANNED = Path(__file__).resolve().parent / "canned"


# ---------------------------------------------------------------- the feature probe

@pytest.mark.parametrize("canned, expected", [
    ("cpuinfo-epyc-avx512-vnni.txt", ("avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni")),
    ("cpuinfo-epyc-avx2.txt", ("avx2",)),
])
def test_the_probe_reads_the_int8_features_from_cpuinfo(canned, expected):
    assert hardware.parse_cpu_features((CANNED / canned).read_text()) == expected
    assert hardware.cpu_features(str(CANNED / canned)) == expected


def test_the_probe_reads_arm_features_and_says_unknown_without_cpuinfo(tmp_path):
    graviton = "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd evtstrm aes crc32 atomics asimddp i8mm\n"
    assert hardware.parse_cpu_features(graviton) == ("asimddp", "i8mm")
    assert hardware.parse_cpu_features("processor\t: 0\n") == ()
    assert hardware.cpu_features(str(tmp_path / "absent")) is None


# ---------------------------------------------------------------- the artifact and the re-gate

@pytest.fixture(scope="module")
def int8_artifact(tiny_models, tmp_path_factory):
    """An int8 embedding artifact whose 'quantizer' keeps the fp32 weights, so it passes its gate
    here and a re-gate on faithful kernels passes too; tests break it on purpose."""
    out = tmp_path_factory.mktemp("int8") / "emb-int8"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(onnx_optimize, "quantize_int8", lambda src, dst: shutil.copy(src, dst) and {"method": "copy"})
        assert compile_cli.main(["--model", str(tiny_models["embedding"]), "--task", "embedding", "--out", str(out),
                                 "--name", "tiny-int8", "--precision", "int8"]) == 0
    return out


@pytest.fixture(scope="module")
def fp32_artifact(compile_artifact):
    return compile_artifact("embedding")


def engine_features() -> str:
    return features_text(hardware.cpu_features())


def other_features() -> list[str]:
    """Features no worker of this test run reports: the gate must run again."""
    here = hardware.cpu_features()
    return ["avx2"] if here != ("avx2",) else ["avx2", "avx512f", "avx512_vnni"]


def claim(folder: Path, features: list[str] | None, *, spoil_references: bool = False) -> Path:
    """Edit a copied artifact: its gate claims `features`; `spoil_references` replaces the stored
    reference outputs with noise (and re-pins the file), so a re-run of the gate fails."""
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["parity"]["cpu_features"] = features
    if spoil_references:
        rows = folder / parity.SCORE_ROWS_FILE
        feeds, refs, extra = parity._read_probes(rows)
        rng = np.random.default_rng(0)
        parity.save_probes(rows, feeds, [rng.normal(size=r.shape) for r in refs], **extra)
        manifest["files"][parity.SCORE_ROWS_FILE] = sha256_file(rows)
    (folder / MANIFEST).write_text(json.dumps(manifest))
    return folder


def test_the_manifest_records_the_gates_features_figures_and_rows(int8_artifact):
    m = open_artifact(int8_artifact)
    here = hardware.cpu_features()
    assert m.parity["cpu_features"] == (None if here is None else list(here))
    assert m.parity["passed"] is True and m.parity["score_rows"] >= parity.MIN_SCORE_ROWS
    assert {"label_agreement", "p99_score_diff"} <= set(m.parity)
    assert parity.SCORE_ROWS_FILE in m.files  # pinned by sha256 like every other file
    feeds, refs, extra = parity._read_probes(int8_artifact / parity.SCORE_ROWS_FILE)
    assert len(extra["sides"]) == m.parity["score_rows"] and sum(len(r) for r in refs) > extra["sides"].max()


def test_the_same_features_skip_the_gate(int8_artifact):
    with OnnxRuntimeEngine(int8_artifact, open_artifact(int8_artifact)) as engine:
        assert engine.cpu_gate is None or hardware.cpu_features() is None


def test_other_features_rerun_the_gate_on_the_stored_rows(int8_artifact, artifact_copy):
    folder = claim(artifact_copy(int8_artifact), other_features())
    with OnnxRuntimeEngine(folder, open_artifact(folder)) as engine:
        gate = engine.cpu_gate
    assert gate.startswith(f"gate re-run on {engine_features()}: labels agree on 100.00% of ")
    assert gate.endswith(", passed")


def test_a_failing_rerun_refuses_the_artifact_naming_features_and_figures(int8_artifact, artifact_copy):
    folder = claim(artifact_copy(int8_artifact), ["avx2", "amx_int8"], spoil_references=True)
    with pytest.raises(ParityError) as e:
        OnnxRuntimeEngine(folder, open_artifact(folder)).load()
    message = str(e.value)
    assert "int8 artifact tiny-int8@1 passed its gate on CPU features [avx2, amx_int8]" in message
    assert f"this worker has {engine_features()}" in message
    assert "the gate re-run here fails: labels agree on " in message and "(>= 99% needed)" in message
    assert "p99 |score diff| " in message and "(<= 0.02 needed); refused" in message


def test_an_int8_artifact_without_stored_rows_is_refused_on_other_features(int8_artifact, artifact_copy):
    folder = claim(artifact_copy(int8_artifact), other_features())
    manifest = json.loads((folder / MANIFEST).read_text())
    del manifest["files"][parity.SCORE_ROWS_FILE]
    (folder / MANIFEST).write_text(json.dumps(manifest))
    (folder / parity.SCORE_ROWS_FILE).unlink()
    with pytest.raises(ParityError, match="stores no gate rows to re-run the gate here"):
        OnnxRuntimeEngine(folder, open_artifact(folder)).load()


def test_an_unknown_instruction_set_reruns_the_gate(int8_artifact, artifact_copy):
    folder = artifact_copy(int8_artifact)
    engine = OnnxRuntimeEngine(folder, open_artifact(folder))
    engine._load()
    engine._gate_on_this_cpu(None)
    assert engine.cpu_gate.startswith("gate re-run on unknown (no /proc/cpuinfo): ")


# ---------------------------------------------------------------- the jobs

@pytest.fixture
def pairs_input(tmp_path):
    path = tmp_path / "pairs.parquet"
    pairs_frame(40).to_parquet(path)
    return path


@pytest.mark.spark
def test_a_job_marks_every_row_with_the_refusal_and_exits_1(spark, int8_artifact, artifact_copy, pairs_input,
                                                            tmp_path, capsys):
    from jobs.duplicates import main

    folder = claim(artifact_copy(int8_artifact), ["avx2", "amx_int8"], spoil_references=True)
    rc, summary, err = run_job(main, capsys, input=pairs_input, output=tmp_path / "out", model=folder,
                               run_date="2026-12-01", backend="onnx")
    assert rc == 1 and summary["error"] == summary["rows_in"] == 40, err
    assert "40 of 40 rows invalid or failed" in err
    assert "all rows were written; an error: artifact_refused: int8 artifact tiny-int8@1 passed its gate" in err
    rows = read_partition(tmp_path / "out", "2026-12-01")
    assert (rows.status == "error").all() and rows.score.isna().all()
    assert rows.error.str.startswith("artifact_refused: int8 artifact tiny-int8@1 passed its gate on CPU "
                                     "features [avx2, amx_int8]").all()
    assert rows.error.str.contains("labels agree on ").all() and rows.error.str.contains("p99 |score diff|").all()


@pytest.mark.spark
def test_a_job_scores_with_the_fallback_model_where_the_int8_one_is_refused(spark, int8_artifact, fp32_artifact,
                                                                             artifact_copy, pairs_input, tmp_path,
                                                                             capsys):
    from jobs.duplicates import main

    folder = claim(artifact_copy(int8_artifact), ["avx2", "amx_int8"], spoil_references=True)
    rc, summary, err = run_job(main, capsys, input=pairs_input, output=tmp_path / "out", model=folder,
                               fallback_model=fp32_artifact, run_date="2026-12-01", backend="onnx")
    assert rc == 0 and summary["ok"] == 40, err
    rows = read_partition(tmp_path / "out", "2026-12-01")
    assert (rows.status == "ok").all() and (rows.model == open_artifact(fp32_artifact).model_id).all()


@pytest.mark.spark
def test_a_fallback_model_for_another_task_exits_2(spark, int8_artifact, compile_artifact, pairs_input, tmp_path,
                                                   capsys):
    from jobs.duplicates import main

    rc, _, err = run_job(main, capsys, input=pairs_input, output=tmp_path / "out", model=int8_artifact,
                         fallback_model=compile_artifact("text-classification"), run_date="2026-12-01")
    assert rc == 2
    assert "scores text-classification and --model" in err and "a fallback must score the same task" in err
    assert not (tmp_path / "out").exists()
