"""The benchmark's arithmetic and plumbing (bench/): FLOPs, shares, time split, the engine pool,
the report. Correctness only: no timing is asserted."""
import numpy as np
import pytest

from bench import job_bench, limits, report
from bench.run import COMMITTED, ROOT, TARGETS, job_texts, parse_args, target

MINILM = {"layers": 6, "hidden": 384, "intermediate": 1536, "heads": 12}


def test_row_flops_matches_the_hand_count():
    # 6 x (4*384^2 + 2*384*1536) x 2 per token, plus 4*L*h per token per layer for attention.
    per_token_dense = 6 * (4 * 384 ** 2 + 2 * 384 * 1536) * 2
    assert limits.row_flops(np.array([1]), MINILM) == pytest.approx(per_token_dense + 6 * 4 * 384)
    at_128 = limits.flops_per_token(MINILM, 128)
    assert at_128 == pytest.approx(per_token_dense + 6 * 4 * 128 * 384)
    assert 21.0e6 < at_128 < 22.5e6  # the design's ~21.7 MFLOP per real token
    assert limits.row_flops(np.array([10, 20]), MINILM) == pytest.approx(
        limits.row_flops(np.array([10]), MINILM) + limits.row_flops(np.array([20]), MINILM))


def test_model_shape_reads_the_config(minilm_dir):
    assert limits.model_shape(minilm_dir) == MINILM


def test_job_texts_deal_pairs_and_dedupe_per_share():
    left = ["a", "b", "a", "c"]
    right = ["b", "a", "d", "a"]
    assert job_texts(left, right, 2) == [["a", "b", "d"], ["b", "c", "a"]]
    assert job_texts(left, right, 1) == [["a", "b", "c", "d"]]


def test_time_split_adds_up_to_the_wall_time():
    summary = {"scoring_seconds": 10.0, "engine_seconds": 12.0, "tokenize_seconds": 2.0, "udf_seconds": 16.0}
    split = job_bench.time_split(summary, passthrough=1.5, cores=2)
    assert split["engine"] == 6.0 and split["tokenize"] == 1.0 and split["other_python"] == 1.0
    assert split["read_shuffle_write"] == 1.5 and split["unaccounted"] == 0.5
    assert sum(split["fractions"].values()) == pytest.approx(1.0)


def test_targets_are_judged_against_their_goals():
    assert target("job_vs_bare_engine", 0.95)["met"] is True
    assert target("padding_efficiency", 0.5)["met"] is False
    assert target("int8_vs_predict_batch_udf", None, "refused")["met"] is False
    assert TARGETS["fp32_vs_predict_batch_udf"] == 3.0 and TARGETS["useful_flops_vs_peak"] == 0.65


def test_engine_pool_runs_shares_and_counts_tokens(compile_artifact):
    from bench.engine_bench import EnginePool

    folder = compile_artifact("embedding")
    rng = np.random.default_rng(0)
    ids = [rng.integers(1000, 2000, n) for n in (5, 9, 17, 3, 30, 12)]
    types = [np.zeros_like(x) for x in ids]
    with EnginePool(2) as pool:
        r = pool.best(str(folder), "onnx", ids, types, token_budget=64)
    assert r["rows"] == 6 and r["real_tokens"] == sum(len(x) for x in ids)
    assert r["padded_tokens"] >= r["real_tokens"] and len(r["configs"]) == 2
    assert {(c["processes"], c["threads"]) for c in r["configs"]} == {(2, 1), (1, 2)}


def _results() -> dict:
    job = {"job": "duplicates", "precision": "fp32", "rows": 100, "rows_per_second": 10.0,
           "bare_engine_rows_per_second": 11.0, "vs_bare_engine": 0.91, "useful_gflops": 50.0, "vs_peak": 0.5,
           "padding_efficiency": 0.95, "bare_engine": {"processes": 2, "threads": 1, "useful_gflops": 55.0, "vs_peak": 0.55},
           "time_split": {"fractions": {"read_shuffle_write": 0.1, "tokenize": 0.02, "engine": 0.8, "other_python": 0.03,
                                        "unaccounted": 0.05}}}
    return {
        "meta": {"started": "2026-01-01T00:00:00+00:00", "quick": True, "cores": 2, "machine_cpus": 2, "cpu": "x",
                 "loadavg_start": [1.0, 1.0, 1.0], "loadavg_end": [1.2, 1.0, 1.0], "bench_seconds": 60.0},
        "model": {"name": "m", "mflop_per_token_at_128": 21.6},
        "limit": {"gemm_peak_gflops": 100.0, "runs": [{"processes_gflops": 100.0, "threads_gflops": 90.0,
                                                       "library": "torch", "n": 1024}]},
        "targets": [target("job_vs_bare_engine", 0.91, "n"), target("int8_vs_predict_batch_udf", None, "refused")],
        "peers": {"rows": 10, "runs": [
            {"peer": "accel-scoring job, onnx fp32", "rows_per_second": 9.0, "useful_gflops": 40.0, "vs_peak": 0.4,
             "vs_predict_batch_udf": 3.0, "padding_efficiency": 0.95},
            {"peer": "predict_batch_udf + transformers", "rows_per_second": 3.0, "useful_gflops": 30.0, "vs_peak": 0.3,
             "vs_predict_batch_udf": 1.0, "padding_efficiency": 0.5,
             "vs_job_fp32_scores": {"max_abs_diff": 1e-6, "label_agreement": 1.0}},
            {"peer": "Ray Data map_batches + transformers", "skipped": "no ray"}]},
        "jobs": [job], "spark": {"session_start_seconds": 5.0},
        "engine": [{"artifact": "a", "mix": "m", "rows": 5, "mean_tokens": 9.0, "rows_per_second": 5.0,
                    "tokens_per_second": 45.0, "useful_gflops": 1.0, "vs_peak": 0.01, "processes": 2, "threads": 1,
                    "padding_efficiency": 0.9}],
        "artifacts": {"fp32": {"path": "p", "precision": "fp32", "graph": "fused-bert", "parity": {"max_abs_diff": 1e-7}},
                      "int8": {"refused": "error: failed parity"}},
    }


def test_report_writes_json_markdown_and_plot(tmp_path):
    paths = report.write(_results(), tmp_path)
    md = (tmp_path / "results.md").read_text()
    assert "| job_vs_bare_engine | 90% | 91.0% | yes |" in md
    assert "int8: refused by the parity gate" in md and "skipped: no ray" in md
    assert "load average 1.00 at start" in md
    assert (tmp_path / "results.json").is_file()
    assert (tmp_path / "results.png") in paths or not report.plot  # the plot needs matplotlib


def test_bench_writes_scratch_results_unless_told_to_commit(monkeypatch, tmp_path):
    monkeypatch.delenv("BENCH_QUICK", raising=False)
    assert parse_args([]).out == ROOT / "out" / "bench" / "results"
    assert parse_args(["--quick", "--work", str(tmp_path)]).out == tmp_path / "results"
    assert parse_args(["--commit"]).out == COMMITTED == ROOT / "bench" / "results"
    for flags in (["--commit", "--quick"], ["--commit", "--out", str(tmp_path)]):
        with pytest.raises(SystemExit):
            parse_args(flags)
