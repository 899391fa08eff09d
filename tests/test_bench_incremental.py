"""bench/incremental.py's data and report: the nightly change, the catalogue's shape, the
sizes, the files. Correctness only: no timing is asserted."""
from collections import Counter

import pytest

from bench import incremental
from bench.harness import COMMITTED


def test_day_two_keeps_90_percent_edits_5_and_replaces_5():
    day1, day2, change = incremental.nightly_days(400, seed=3)
    assert change == {"edited": 20, "removed": 20, "new": 20, "unchanged": 360} and len(day2) == len(day1)
    merged = day1.merge(day2, on="pair_id", suffixes=("_1", "_2"))
    assert len(merged) == 380 and not set(day2.pair_id) - set(merged.pair_id) - {i for i in day2.pair_id if i[0] == "n"}
    edited = merged[merged.left_title_1 != merged.left_title_2]
    assert len(edited) == 20
    assert all(b.startswith(a) and b[len(a):] in incremental.TITLE_EDITS
               for a, b in zip(edited.left_title_1, edited.left_title_2))
    same = [c for c in day1.columns if c not in ("pair_id", "left_title")]
    assert all((merged[f"{c}_1"] == merged[f"{c}_2"]).all() for c in same)
    new = day2[day2.pair_id.str.startswith("n")]
    assert len(new) == 20 and not set(new.pair_id) & set(day1.pair_id)


def test_catalogue_pairs_show_each_product_exactly_five_times_never_with_itself():
    pairs = incremental.catalogue_pairs(60, seed=5)
    left = list(zip(pairs.left_title, pairs.left_brand, pairs.left_description))
    right = list(zip(pairs.right_title, pairs.right_brand, pairs.right_description))
    counts = Counter(left + right)
    assert len(pairs) == 150 and len(counts) == 60 and set(counts.values()) == {5}
    assert all(a != b for a, b in zip(left, right)) and pairs.pair_id.is_unique
    with pytest.raises(ValueError):
        incremental.catalogue_pairs(61)  # 305 sides cannot be paired


def test_sizes_scale_the_issue_sizes_and_the_catalogue_batch_together():
    full = incremental.Sizes()
    assert (full.nightly_pairs, full.catalogue_products, full.catalogue_arrow_rows) == (20_000, 16_384, 4096)
    tenth = incremental.Sizes(0.1)
    assert (tenth.nightly_pairs, tenth.catalogue_products, tenth.catalogue_arrow_rows) == (2000, 1638, 410)


def test_flags_follow_bench_run(monkeypatch, tmp_path):
    monkeypatch.delenv("BENCH_QUICK", raising=False)
    args = incremental.parse_args(["--scale", "0.1", "--work", str(tmp_path)])
    assert args.scale == 0.1 and args.out == tmp_path / "results" and not args.quick
    assert incremental.parse_args(["--commit"]).out == COMMITTED
    for flags in (["--scale", "0"], ["--scale", "2"], ["--commit", "--quick"]):
        with pytest.raises(SystemExit):
            incremental.parse_args(flags)


def _run(name: str, seconds: float, pairs: int = 100, cache: dict | None = None) -> dict:
    row = {"run": name, "flags": "", "pairs": pairs, "scoring_seconds": seconds, "wall_seconds": seconds + 1,
           "engine_seconds": seconds, "tokenize_seconds": 0.1, "udf_seconds": seconds, "real_tokens": 1000,
           "engine_loads": 0, "pairs_per_second": round(pairs / seconds, 2), "spark_jobs": 2,
           "spark_job_seconds": [["count at x.py:1", 0.5], ["parquet at y.py:2", None]], "arrow_batch_rows": 4096,
           "texts_encoded": None, "dedup": {"level": "batch"}, "spark_overhead_seconds": 1.0, "output_path": "p"}
    if cache:
        row["cache"] = cache
    return row


def test_report_judges_the_targets_and_writes_json_markdown_and_plot(tmp_path):
    cache = {"hits": 90, "misses": 10, "size_entries": 100, "size_bytes": 160_000, "size_batches": 2}
    same = {"rows": 100, "same_ids": True, "max_abs_diff": 1e-8, "label_agreement": 1.0}
    runs = [_run("day 1, cold cache", 60.0, cache=cache), _run("day 2, cache", 10.0, cache=cache),
            _run("day 2, no cache", 50.0), _run("day 2, per batch", 70.0)]
    results = {
        "meta": {"started": "2026-01-01T00:00:00+00:00", "quick": False, "scale": 0.1, "cores": 2, "machine_cpus": 2,
                 "loadavg_start": [3.0, 1, 1], "loadavg_end": [4.0, 1, 1], "bench_seconds": 600.0},
        "artifact": "artifacts/bench/minilm-fp32-fused", "spark": {"session_start_seconds": 9.0},
        "nightly": {"pairs_day1": 100, "pairs_day2": 100, "runs": runs,
                    "change": {"edited": 5, "removed": 5, "new": 5, "unchanged": 90},
                    "day1_over_day2_scoring": 6.0, "day1_over_day2_wall": 5.5, "day1_over_day2_engine": 6.0,
                    "no_cache_over_cache_scoring": 5.0, "per_batch_over_cache_scoring": 7.0,
                    "cache_after_day2": {"entries": 100, "bytes": 160_000, "batches": 2, "bytes_per_entry": 1600.0},
                    "scores_cache_vs_no_cache": same, "scores_cache_vs_per_batch": same},
        "catalogue": {"products": 40, "pairs": 100, "pairs_per_product": 5, "arrow_batch_rows": 4096,
                      "runs": [_run("catalogue, embed once per run", 10.0), _run("catalogue, per batch", 25.0)],
                      "run_over_batch_pairs_per_second": 2.5, "batch_over_run_real_tokens": 3.1, "scores": same},
    }
    results["targets"] = incremental.judge(results)
    assert [(t["target"], t["met"]) for t in results["targets"]] == [
        ("nightly_day2_speedup", True), ("catalogue_embed_once_speedup", False)]
    paths = incremental.write(results, tmp_path)
    md = (tmp_path / "incremental.md").read_text()
    assert "at 0.1 of the issue's sizes" in md and "| nightly_day2_speedup | 5.0x | 6.00x | yes |" in md
    assert "| catalogue_embed_once_speedup | 3.0x | 2.50x | **no** |" in md and "1600.0 bytes per entry" in md
    assert "| count at x.py:1 | 0.50 |" in md and "load average 3.00 at start" in md
    assert (tmp_path / "incremental.json").is_file()
    assert (tmp_path / "incremental.png") in paths or not incremental.plot  # the plot needs matplotlib
