"""The benchmark's arithmetic and plumbing (bench/): FLOPs, shares, time split, the engine pool,
the report. Correctness only: no timing is asserted."""
import numpy as np
import pytest

from bench import flop_ceiling, job_bench, report
from bench.harness import COMMITTED, ROOT
from bench.run import TARGETS, job_texts, parse_args, target

MINILM = {"layers": 6, "hidden": 384, "intermediate": 1536, "heads": 12}


def test_row_flops_matches_the_hand_count():
    # 6 x (4*384^2 + 2*384*1536) x 2 per token, plus 4*L*h per token per layer for attention.
    per_token_dense = 6 * (4 * 384 ** 2 + 2 * 384 * 1536) * 2
    assert flop_ceiling.row_flops(np.array([1]), MINILM) == pytest.approx(per_token_dense + 6 * 4 * 384)
    at_128 = flop_ceiling.flops_per_token(MINILM, 128)
    assert at_128 == pytest.approx(per_token_dense + 6 * 4 * 128 * 384)
    assert 21.0e6 < at_128 < 22.5e6  # the design's ~21.7 MFLOP per real token
    assert flop_ceiling.row_flops(np.array([10, 20]), MINILM) == pytest.approx(
        flop_ceiling.row_flops(np.array([10]), MINILM) + flop_ceiling.row_flops(np.array([20]), MINILM))


@pytest.mark.parametrize("library", flop_ceiling.LIBRARIES)
def test_each_gemm_of_the_ceiling_multiplies_what_it_is_given(library):
    """The ceiling's GEMMs (torch's and ONNX Runtime's own MatMul) compute a real product, so
    their FLOP/s count work done."""
    run = flop_ceiling._matmul(library, 64, 1)
    out = run()
    product = out[0] if isinstance(out, list) else out.numpy()
    assert product.shape == (64, 64) and np.abs(product).sum() > 0


def test_vector_bound_reads_width_and_clock_from_cpuinfo():
    info = "processor : 0\ncpu MHz\t\t: 2600.000\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw\n"
    assert flop_ceiling.vector_bound(2, info) == {"fp32_lanes": 16, "flops_per_cycle_per_core": 64, "ghz": 2.6,
                                            "gflops": 332.8}
    assert flop_ceiling.vector_bound(4, info.replace(" avx512f avx512bw", ""))["gflops"] == 4 * 32 * 2.6
    assert flop_ceiling.vector_bound(2, "flags : avx2\n")["gflops"] is None  # no clock reported: no figure


def test_model_shape_reads_the_config(minilm_dir):
    assert flop_ceiling.model_shape(minilm_dir) == MINILM


def test_job_texts_deal_the_runs_distinct_texts_once():
    left = ["a", "b", "a", "c"]
    right = ["b", "a", "d", "a"]
    assert job_texts(left, right, 2) == [["a", "c"], ["b", "d"]]  # distinct in order: a, b, c, d
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


def test_report_names_the_ceilings_library_the_vector_bound_and_any_figure_above_the_ceiling(tmp_path):
    r = _results()
    both = {"torch.matmul": {"processes_gflops": 90.0, "threads_gflops": 80.0},
            "onnxruntime MatMul": {"processes_gflops": 100.0, "threads_gflops": 95.0}}
    r["limit"] = {"gemm_peak_gflops": 100.0, "library": "onnxruntime MatMul", "above_ceiling": ["bare engine"],
                  "vector_bound": {"fp32_lanes": 16, "flops_per_cycle_per_core": 64, "ghz": 2.6, "gflops": 332.8},
                  "runs": [{"sizes": [1024], "libraries": both, "library": "onnxruntime MatMul"}]}
    report.write(r, tmp_path)
    md = (tmp_path / "results.md").read_text()
    assert "fp32 GEMM peak 100.0 GFLOP/s on 2 cores (onnxruntime MatMul; 332.8 GFLOP/s from the vector width" in md
    assert "**Above the measured ceiling** (the ceiling or the FLOP count is wrong): bare engine" in md
    assert "torch.matmul 90.0 GFLOP/s as 2 processes x 1 thread, 80.0 as 1 x 2, onnxruntime MatMul 100.0" in md


def test_each_jobs_cold_runs_are_judged_and_reported_with_their_time_beyond_the_bare_engine(tmp_path):
    from bench.run import judge

    r = _results()
    intent = {**r["jobs"][0], "job": "query_intent", "vs_bare_engine": 0.8,
              "cold": {"rows": 100, "exit_code": 52, "error": ["OutOfMemoryError"]}}
    r["jobs"] = [{**r["jobs"][0],
                  "cold": {"rows": 100, "scoring_seconds": 12.5, "rows_per_second": 8.0, "real_tokens": 900,
                           "overhead_seconds": 1.2, "vs_bare_engine": 0.905, "sizing_seconds": 1.5,
                           "vs_bare_engine_sized": 0.806},
                  "cold_nightly": {"rows": 800, "scoring_seconds": 80.0, "rows_per_second": 10.0, "real_tokens": 7200,
                                   "overhead_seconds": 9.6, "vs_bare_engine": 0.88}},
                 intent]
    verdicts = {t["target"]: t for t in judge(r, "refused")}
    small = verdicts["job_vs_bare_engine (duplicates, cold, 100 rows)"]
    assert small["met"] and "steady state 0.910" in small["note"] and "1.2 s beyond" in small["note"]
    assert "0.806 with the 1.5 s sizing the input counted in" in small["note"]
    nightly = verdicts["job_vs_bare_engine (duplicates, cold, 800 rows)"]
    assert not nightly["met"] and "on the 100-row run's texts" in nightly["note"]
    failed = verdicts["job_vs_bare_engine (query_intent, cold, 100 rows)"]
    assert failed["value"] is None and not failed["met"]
    r["targets"] = list(verdicts.values())
    report.write(r, tmp_path)
    md = (tmp_path / "results.md").read_text()
    assert "| duplicates | 100 | 12.5 | 8.0 | 900 | 90% | 1.2 | 1.5 | 81% |" in md
    assert "| duplicates | 800 | 80.0 | 10.0 | 7,200 | 88% | 9.6 | – | – |" in md  # a results.json from before sizing
    assert "| query_intent | 100 | failed: exit 52 | – | – | – | – | – | – |" in md


def test_only_fp32_rows_are_judged_against_the_fp32_ceiling():
    from bench.run import above_ceiling

    rated = [("engine only: onnx fp32 fused on offers", {"vs_peak": 1.02}), ("job duplicates fp32", {"vs_peak": 0.9}),
             ("engine only: onnx int8 (gated) on offers", {"vs_peak": 1.4}), ("Ray Data", {"skipped": "no ray"})]
    assert above_ceiling(rated) == ["engine only: onnx fp32 fused on offers"]


def test_bench_writes_scratch_results_unless_told_to_commit(monkeypatch, tmp_path):
    monkeypatch.delenv("BENCH_QUICK", raising=False)
    assert parse_args([]).out == ROOT / "out" / "bench" / "results"
    assert parse_args(["--quick", "--work", str(tmp_path)]).out == tmp_path / "results"
    assert parse_args(["--commit"]).out == COMMITTED == ROOT / "bench" / "results"
    for flags in (["--commit", "--quick"], ["--commit", "--out", str(tmp_path)]):
        with pytest.raises(SystemExit):
            parse_args(flags)


@pytest.mark.parametrize("task", ["embedding", "text-classification"])
def test_null_artifact_is_a_verified_artifact_whose_graph_only_sums_the_mask(compile_artifact, tmp_path, task):
    from bench import null_artifact
    from engines.artifact import sha256_file
    from engines.registry import engine_class
    from engines.store import open_artifact

    compiled = compile_artifact(task)
    out = null_artifact.build(compiled, tmp_path / "null")
    source, m = open_artifact(compiled), open_artifact(out)  # every file checked against the manifest
    assert m.files["model.onnx"] == sha256_file(out / "model.onnx") != source.files["model.onnx"]
    assert m.files["tokenizer/tokenizer.json"] == source.files["tokenizer/tokenizer.json"]
    assert (m.task, m.labels, m.threshold, m.max_seq_len, m.output) == (
        source.task, source.labels, source.threshold, source.max_seq_len, source.output)
    assert m.name == f"{source.name}-null" and m.source["null_of"] == source.digest
    real = engine_class("onnx")(compiled, source).load()
    null = engine_class("onnx")(out, m).load()
    mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]])
    feed = {"input_ids": mask * 7, "attention_mask": mask, "token_type_ids": np.zeros_like(mask)}
    got = null.infer(feed)
    assert got.shape == real.infer(feed).shape and np.array_equal(got, np.array([[3.0], [4.0]]) * np.ones_like(got))
    stamp = (out / "model.onnx").stat().st_mtime_ns
    assert null_artifact.build(compiled, out) == out and (out / "model.onnx").stat().st_mtime_ns == stamp  # reused


def test_host_time_split_adds_up_and_divides_the_worker_rest_as_the_replay_measured():
    from bench import host_ceiling

    summary = {"scoring_seconds": 20.0, "tokenize_seconds": 16.0, "engine_seconds": 2.0, "udf_seconds": 26.0}
    worker = {"phases": {"validation": 3.0, "tokenization": 9.0, "batching_padding": 1.0, "engine": 0.5,
                         "scatter_output": 0.0}}
    split = host_ceiling.time_split(summary, read_arrow=3.0, read_arrow_write=4.5, worker=worker, cores=2)
    assert split["tokenization"] == 8.0 and split["engine"] == 1.0
    assert split["validation"] == 3.0 and split["batching_padding"] == 1.0 and split["scatter_output"] == 0.0
    assert split["read_arrow"] == 3.0 and split["write"] == 1.5 and split["unaccounted"] == 2.5
    assert sum(split["fractions"].values()) == pytest.approx(1.0)


def test_cores_per_device_divides_the_device_rate_by_the_host_rate_per_core():
    from bench import host_ceiling

    rows = host_ceiling.cores_per_device([
        {"job": "duplicates", "sequences_per_row": 2.0, "rows_per_second_per_core": 1000.0,
         "padded_tokens_per_sequence": 64.0},
        {"job": "query_intent", "sequences_per_row": 1.0, "rows_per_second_per_core": 9000.0,
         "padded_tokens_per_sequence": 8.0}])
    a100 = {r["job"]: r for r in rows if r["device"].startswith("NVIDIA A100")}
    assert a100["duplicates"]["device_rows_per_second"] == 3950 and a100["duplicates"]["cores"] == 4
    assert a100["duplicates"]["cores_token_scaled"] == 8  # 3,950 x 128 / 64 rows/s over 1,000 per core
    assert a100["query_intent"]["cores"] == 1 and a100["query_intent"]["cores_token_scaled"] == 15
    assert len(rows) == 2 * len(host_ceiling.DEVICES) and all(r["source"] for r in rows)


def _host() -> dict:
    job = {"job": "duplicates", "rows": 100, "rows_per_second": 300.0, "rows_per_second_per_core": 150.0,
           "plain_tokenization_rows_per_second": 100.0, "plain_tokenization_seconds": [1.0, 1.0],
           "vs_plain_tokenization": 1.5, "target": 1.5, "met": True, "padding_efficiency": 0.99,
           "sequences_per_row": 1.9, "scoring_seconds": 0.33,
           "accelerator_arrow_batch": {"arrow_batch_rows": 16384, "rows_per_second_per_core": 160.0,
                                       "vs_plain_tokenization": 1.6},
           "dedup": "run", "other_dedup": {"dedup": "batch", "rows_per_second_per_core": 120.0,
                                           "vs_plain_tokenization": 1.2},
           "single_text_route": "flash_tokenizer for single texts",
           "tokenizers_alone": {"rows_per_second_per_core": 90.0, "vs_plain_tokenization": 0.9},
           "passthrough": {"seconds": 0.2, "rows_per_second_per_core": 250.0, "vs_plain_tokenization": 2.5},
           "first_run": {"rows_per_second_per_core": 110.0, "vs_plain_tokenization": 1.1},
           "time_split": {**{k: 0.1 for k in report.SPLIT_NAMES}, "fractions": {k: 0.125 for k in report.SPLIT_NAMES}},
           "worker_replay": {"rows": 50, "arrow_batches": 1, "rows_per_second": 500.0,
                             "fractions": {"validation": 0.1, "tokenization": 0.9}}}
    return {"started": "2026-01-01T00:00:00+00:00", "cores": 2, "machine_cpus": 2, "cpu": "x", "quick": False,
            "loadavg_start": [1.0], "loadavg_end": [2.0], "seconds": 60.0, "artifacts": {"graph": "null"},
            "jobs": [job], "vcpus_per_device_on_ec2": "g5.xlarge 4",
            "cores_per_device": [{"device": "d", "source": "s", "job": "duplicates", "device_sequences_per_second": 7900,
                                  "sequences_per_row": 1.9, "device_rows_per_second": 4158,
                                  "host_rows_per_second_per_core": 150.0, "cores": 28,
                                  "padded_tokens_per_sequence": 40.0, "cores_token_scaled": 90}]}


def test_report_renders_the_host_ceiling_with_the_full_run_and_alone(tmp_path):
    full = {**_results(), "host": _host()}
    report.write(full, tmp_path / "full")
    md = (tmp_path / "full" / "results.md").read_text()
    assert "## Host ceiling" in md and "| duplicates | 100 | 300.0 | 150.0 | 100.0 (1.0 s, 1.0 s) | 1.50x | 1.5x | yes |" in md
    assert "| 160.0, 1.60x | `batch` (default `run`): 120.0, 1.20x | flash_tokenizer for single texts | 90.0, 0.90x | 250.0, 2.50x | 110.0, 1.10x |" in md
    assert "| d | s | duplicates | 7,900 | 1.90 | 4,158 | 150.0 | **28** | 40.0 | 90 |" in md
    report.write({"host": _host()}, tmp_path / "alone")
    assert "host ceiling only" in (tmp_path / "alone" / "results.md").read_text()


def test_only_host_is_a_flag():
    assert parse_args(["--only", "host"]).only == "host" and parse_args([]).only is None


@pytest.mark.spark
def test_worker_env_reaches_the_python_workers_of_the_jobs_run_inside(spark):
    import os

    import pandas as pd

    from bench import host_ceiling

    def seen(frames):
        for _ in frames:
            yield pd.DataFrame({"v": [os.environ.get("ACCEL_SCORING_BENCH_PROBE", "unset")]})

    def values() -> set:
        return {r.v for r in spark.range(2).repartition(2).mapInPandas(seen, "v string").collect()}

    with host_ceiling._worker_env(spark, "ACCEL_SCORING_BENCH_PROBE", "0"):
        assert values() == {"0"}
    assert values() == {"unset"} and "ACCEL_SCORING_BENCH_PROBE" not in spark.sparkContext.environment


def test_a_cold_submit_tells_a_failed_run_from_a_summary_with_an_error_count(tmp_path):
    """bench/harness.py submit: a run summary has an `error` count of its own, so a failed
    spark-submit is marked `failed` (the demo once took every summary for a failure)."""
    from bench.harness import submit

    run = submit("duplicates.py", ["--input", str(tmp_path / "none.parquet"), "--output", str(tmp_path / "out"),
                                   "--model", str(tmp_path / "no-model")], memory=False)
    assert run["failed"] and run["exit_code"] == 2, run
    assert any("no-model" in line for line in run["error"]), run["error"]


def test_the_table_commit_bench_reports_the_difference_of_the_medians():
    from bench import table_commit

    runs = [{"output": out, "run_date": f"2026-11-0{i}", "scoring_seconds": s, "wall_seconds": w,
             "wall_seconds_submit": w + 2, "spark_jobs": {}} for i, (out, s, w) in enumerate(
        [("parquet", 10.0, 15.0), ("iceberg", 10.5, 16.0), ("parquet", 12.0, 17.0), ("iceberg", 11.0, 18.5),
         ("parquet", 11.0, 16.0), ("iceberg", 30.0, 40.0)], start=1)]
    summary = table_commit.summarise(runs)
    assert summary["medians"]["parquet"] == {"scoring_seconds": 11.0, "wall_seconds": 16.0, "wall_seconds_submit": 18.0}
    assert summary["iceberg_minus_parquet"] == {"scoring_seconds": 0.0, "wall_seconds": 2.5, "wall_seconds_submit": 2.5}
    page = table_commit.markdown({"summary": summary, "meta": {"started": "t", "cpu": "c", "loadavg_start": [0],
                                                               "loadavg_end": [0]},
                                  "rows": 100_000, "repeats": 3, "runs": runs})
    assert "Iceberg minus Parquet: scoring +0.0 s, job wall +2.5 s" in page and page.count("| iceberg |") == 4
