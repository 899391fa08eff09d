"""Incremental runs (`--cache`, `--dedup run`) measured end to end on local Spark.

    python -m bench.incremental            # both scenarios at full size, results in out/bench/results/
    python -m bench.incremental --quick    # a smoke run of every path on tiny sizes (or BENCH_QUICK=1)
    python -m bench.incremental --commit   # a full run that replaces the committed bench/results/incremental.*
    python -m bench.incremental --scale 0.1  # a tenth of the sizes, for a busy or slow machine

Nightly: day 1 is the seeded generator's product pairs; day 2 keeps 90% of day 1's rows,
edits the title of 5% (same ids) and replaces 5% with new pairs (new ids, another seed). In one
Spark session: a warm-up, day 1 with a cold --cache, day 2 with it, and for reference day 2
without a cache (`--dedup run`) and per Arrow batch (`--dedup batch`, the plan before --cache).
Catalogue: pairs in which every product appears exactly 5 times, bi-encoder embed-once per run
(`--dedup run`) against per-batch encoding (`--dedup batch`) with the default Arrow batch of
4,096 rows (at --scale, the batch shrinks with the pairs).
`make bench` (bench/run.py) runs this too; it writes incremental.json, .md and .png.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import random
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench import harness
from bench.harness import ROOT, ensure_artifact, log, minilm_compile_args

TARGETS = {  # the issue's goals for incremental runs (docs/performance.md, "Incremental runs")
    "nightly_day2_speedup": 5.0,  # day 1 scoring seconds / day 2 scoring seconds, with --cache
    "catalogue_embed_once_speedup": 3.0,  # pairs/s, --dedup run / --dedup batch
}
DAY1, DAY2 = "2026-01-01", "2026-01-02"
EDITED_SHARE = REPLACED_SHARE = 0.05  # of day 1's ids: 10% of day 2's rows changed in all
PAIRS_PER_PRODUCT = 5
# Seller edits between two nightly snapshots: a bundle, a condition, a new season's listing.
TITLE_EDITS = (" - 2 Pack", " (Renewed)", " - 2026 Model", ", Free Shipping", " with Carrying Case",
               " - Limited Edition", " | Bundle")


@dataclasses.dataclass(frozen=True)
class Sizes:
    """The issue's sizes times `scale`. The catalogue's Arrow batch scales with it, so a batch
    holds the same share of the pairs and per-batch encoding finds the same share of repeats."""

    scale: float = 1.0

    @property
    def nightly_pairs(self) -> int:
        return max(40, round(20_000 * self.scale))

    @property
    def catalogue_products(self) -> int:  # pairs: products * 5 / 2, so an even count
        return max(8, 2 * round(16_384 * self.scale / 2))

    @property
    def catalogue_arrow_rows(self) -> int:  # 4096: the jobs' default --arrow-batch-rows
        return max(8, round(4096 * self.scale))


QUICK_SCALE = 0.01
WARMUP_ROWS = 64


# ---------------------------------------------------------------- data

def nightly_days(n: int, seed: int = 31) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Day 1 (n pairs) and day 2: day 1 with 5% of ids' left titles edited and 5% of ids replaced
    by new pairs; how many rows each change touched."""
    day1 = _pairs(n, seed)
    rng = np.random.default_rng(seed)
    k_edit, k_new = round(n * EDITED_SHARE), round(n * REPLACED_SHARE)
    picked = rng.permutation(n)
    edited, removed = day1.pair_id.to_numpy()[picked[:k_edit]], day1.pair_id.to_numpy()[picked[k_edit:k_edit + k_new]]
    day2 = day1[~day1.pair_id.isin(removed)].copy()
    rows = day2.pair_id.isin(edited)
    day2.loc[rows, "left_title"] = [t + TITLE_EDITS[i % len(TITLE_EDITS)] for i, t in
                                    enumerate(day2.loc[rows, "left_title"])]
    new = _pairs(k_new, seed + 1).assign(pair_id=lambda d: "n" + d.pair_id.str[1:])
    day2 = pd.concat([day2, new], ignore_index=True)
    return day1, day2, {"edited": len(edited), "removed": len(removed), "new": len(new),
                        "unchanged": int(len(day1) - len(edited) - len(removed))}


def catalogue_pairs(products: int, seed: int = 41) -> pd.DataFrame:
    """Pairs in which each of `products` distinct offers appears exactly 5 times (never paired
    with itself): every offer repeated 5 times, shuffled, neighbours paired."""
    if products * PAIRS_PER_PRODUCT % 2 or products < 3:
        raise ValueError(f"need an even number of sides and at least 3 products, got {products}")
    offers = _distinct_offers(products, seed)
    rng = random.Random(seed)
    sides = [p for p in range(products) for _ in range(PAIRS_PER_PRODUCT)]
    rng.shuffle(sides)
    for i in range(0, len(sides), 2):  # a self-pair swaps its right side with another pair's
        while sides[i] == sides[i + 1]:
            j = rng.randrange(1, len(sides), 2)
            if sides[j] != sides[i] and sides[j - 1] != sides[i + 1]:
                sides[i + 1], sides[j] = sides[j], sides[i + 1]
    left, right = np.array(sides[0::2]), np.array(sides[1::2])
    frame = {"pair_id": [f"c{i:09d}" for i in range(len(left))]}
    for side, idx in (("left", left), ("right", right)):
        for f in ("title", "brand", "description"):
            frame[f"{side}_{f}"] = offers[f].to_numpy()[idx]
    return pd.DataFrame(frame)


def _pairs(n: int, seed: int) -> pd.DataFrame:
    from bench.synthetic import datasets

    return datasets.product_pairs(n, seed=seed).drop(columns=["label"])


def _distinct_offers(n: int, seed: int) -> pd.DataFrame:
    """`n` distinct (title, brand, description) offers from the generator's pairs."""
    pairs = _pairs(2 * n + 100, seed)
    sides = pd.concat([pairs[[f"{s}_{f}" for f in ("title", "brand", "description")]]
                       .set_axis(["title", "brand", "description"], axis=1) for s in ("left", "right")])
    offers = sides.drop_duplicates(ignore_index=True)
    if len(offers) < n:
        raise ValueError(f"the generator gave {len(offers)} distinct offers, {n} wanted")
    return offers.head(n)


# ---------------------------------------------------------------- runs

def run(quick: bool, out: Path, work: Path, cores: int, scale: float = 1.0) -> dict:
    """Both scenarios in one Spark session; writes the results to `out` and returns them."""
    sizes = Sizes(QUICK_SCALE if quick else scale)
    work = work / "incremental"
    shutil.rmtree(work, ignore_errors=True)  # the cache must start cold, the outputs empty
    work.mkdir(parents=True)
    t0 = time.time()
    results: dict = {"meta": harness.machine_meta(
        quick=quick, cores=cores, scale=sizes.scale,
        sizes={"nightly_pairs": sizes.nightly_pairs, "catalogue_products": sizes.catalogue_products,
               "catalogue_arrow_batch_rows": sizes.catalogue_arrow_rows})}
    argv = minilm_compile_args("--optimize", "fusion")  # harness.main_artifacts' "onnx-fp32-fused"
    model, why = ensure_artifact(ROOT / "artifacts" / "bench" / "minilm-fp32-fused", argv)
    if model is None:
        raise SystemExit(f"bench: the fp32 artifact failed to compile: {why}")
    results["artifact"] = str(model.relative_to(ROOT))
    log("incremental: starting Spark")
    spark, jvm = harness.start_spark(cores)
    results["spark"] = {"master": f"local[{cores}]", "session_start_seconds": round(jvm, 2)}
    try:
        results["nightly"] = nightly(spark, model, work, cores, sizes.nightly_pairs)
        results["catalogue"] = catalogue(spark, model, work, cores, sizes.catalogue_products,
                                         sizes.catalogue_arrow_rows)
    finally:
        spark.stop()
    results["targets"] = judge(results)
    harness.close_meta(results["meta"], t0, "bench_seconds")
    for path in write(results, out):
        log(f"wrote {path}")
    for t in results["targets"]:
        log(f"target {t['target']}: {t['value']} (goal {t['goal']}) {'MET' if t['met'] else 'not met'} - {t['note']}")
    return results


class Runner:
    """The duplicates job in this process's Spark session, one measured run per call."""

    def __init__(self, spark, model: Path, work: Path, cores: int):
        self.spark, self.model, self.work, self.cores = spark, model, work, cores

    def __call__(self, name: str, frame: pd.DataFrame, run_date: str, *flags: str) -> dict:
        from jobs import duplicates

        data = self.work / f"{name}.parquet"
        frame.to_parquet(data, index=False)
        log(f"incremental: {name} ({len(frame):,} pairs{', ' if flags else ''}{' '.join(flags)})")
        seen = _spark_jobs(self.spark)
        s = harness.run_job(duplicates.main, input=data, output=self.work / f"{name}-out", model=self.model,
                              partitions=self.cores, run_date=run_date, extra=list(flags))
        spark_jobs = [j for j in _spark_jobs(self.spark) if j["id"] not in {x["id"] for x in seen}]
        row = {"run": name, "flags": " ".join(flags), "pairs": s["rows_out"],
               **{k: s[k] for k in ("scoring_seconds", "wall_seconds", "engine_seconds", "tokenize_seconds",
                                    "udf_seconds", "real_tokens", "engine_loads")},
               "pairs_per_second": s["rows_per_second"], "spark_jobs": len(spark_jobs),
               "spark_job_seconds": [[j["name"], j["seconds"]] for j in sorted(spark_jobs, key=lambda j: j["id"])],
               "arrow_batch_rows": s["options"]["arrow_batch_rows"],
               # a per-batch run's summary counts tokens, not texts
               "texts_encoded": s["dedup"].get("units_scored"), "dedup": s["dedup"],
               "output_path": str(self.work / f"{name}-out" / f"run_date={run_date}")}
        # Scoring seconds the engine and tokenizer do not explain (worker seconds over the cores).
        row["spark_overhead_seconds"] = round(
            s["scoring_seconds"] - (s["engine_seconds"] + s["tokenize_seconds"]) / self.cores, 3)
        if "cache" in s:
            row["cache"] = s["cache"]
        return row


def _spark_jobs(spark) -> list[dict]:
    """The Spark jobs this application ran so far, each with its call site and seconds (from
    Spark's status store, which keeps the last spark.ui.retainedJobs of them)."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    out = []
    for i in range(jobs.size()):
        j = jobs.apply(i)
        start, end = j.submissionTime(), j.completionTime()
        seconds = (end.get().getTime() - start.get().getTime()) / 1000 if start.isDefined() and end.isDefined() else None
        out.append({"id": j.jobId(), "name": call_site(j.name()), "seconds": seconds})
    return out


def call_site(name: str) -> str:
    """A Spark job's name with this checkout's path dropped: `first at jobs/distinct_plan.py:66`."""
    return name.replace(f"{ROOT}{os.sep}", "")


def nightly(spark, model: Path, work: Path, cores: int, n: int) -> dict:
    day1, day2, change = nightly_days(n)
    job = Runner(spark, model, work, cores)
    cache = str(work / "cache")
    job("warm-up", day1.head(WARMUP_ROWS), DAY1, "--cache", str(work / "warm-up-cache"))
    runs = [job("day 1, cold cache", day1, DAY1, "--cache", cache),
            job("day 2, cache", day2, DAY2, "--cache", cache),
            job("day 2, no cache", day2, DAY2, "--dedup", "run"),
            job("day 2, per batch", day2, DAY2, "--dedup", "batch")]
    d1, d2, plain, batch = runs
    c = d2["cache"]
    return {"pairs_day1": len(day1), "pairs_day2": len(day2), "change": change, "runs": runs,
            "day1_over_day2_scoring": _ratio(d1["scoring_seconds"], d2["scoring_seconds"]),
            "day1_over_day2_wall": _ratio(d1["wall_seconds"], d2["wall_seconds"]),
            "day1_over_day2_engine": _ratio(d1["engine_seconds"], d2["engine_seconds"]),
            "no_cache_over_cache_scoring": _ratio(plain["scoring_seconds"], d2["scoring_seconds"]),
            "per_batch_over_cache_scoring": _ratio(batch["scoring_seconds"], d2["scoring_seconds"]),
            "cache_after_day2": {"entries": c["size_entries"], "bytes": c["size_bytes"], "batches": c["size_batches"],
                                 "bytes_per_entry": round(c["size_bytes"] / c["size_entries"], 1)
                                 if c["size_entries"] else None},
            "scores_cache_vs_no_cache": harness.compare_outputs(d2["output_path"], plain["output_path"]),
            "scores_cache_vs_per_batch": harness.compare_outputs(d2["output_path"], batch["output_path"])}


def catalogue(spark, model: Path, work: Path, cores: int, products: int, arrow_rows: int) -> dict:
    pairs = catalogue_pairs(products)
    job = Runner(spark, model, work, cores)
    arrow = ["--arrow-batch-rows", str(arrow_rows)]
    once = job("catalogue, embed once per run", pairs, DAY1, "--dedup", "run", *arrow)
    batch = job("catalogue, per batch", pairs, DAY1, "--dedup", "batch", *arrow)
    return {"products": products, "pairs": len(pairs), "pairs_per_product": PAIRS_PER_PRODUCT,
            "arrow_batch_rows": once["arrow_batch_rows"], "runs": [once, batch],
            "run_over_batch_pairs_per_second": _ratio(once["pairs_per_second"], batch["pairs_per_second"]),
            "batch_over_run_real_tokens": _ratio(batch["real_tokens"], once["real_tokens"]),
            "scores": harness.compare_outputs(once["output_path"], batch["output_path"])}


def _ratio(a, b) -> float | None:
    return round(a / b, 3) if a and b else None


def judge(r: dict) -> list[dict]:
    n, c = r["nightly"], r["catalogue"]
    d1, d2 = n["runs"][0], n["runs"][1]
    once, batch = c["runs"]
    return [
        _target("nightly_day2_speedup", n["day1_over_day2_scoring"],
                f"scoring seconds, day 1 {d1['scoring_seconds']} s (cold cache) / day 2 {d2['scoring_seconds']} s "
                f"(cache) on {n['pairs_day1']:,} pairs; engine {n['day1_over_day2_engine']}x"),
        _target("catalogue_embed_once_speedup", c["run_over_batch_pairs_per_second"],
                f"pairs/s, --dedup run {once['pairs_per_second']} / --dedup batch {batch['pairs_per_second']} on "
                f"{c['pairs']:,} pairs of {c['products']:,} products; max |score diff| {c['scores']['max_abs_diff']:.1e}"),
    ]


def _target(name: str, value: float | None, note: str) -> dict:
    return harness.target(name, value, TARGETS[name], note)


# ---------------------------------------------------------------- report

def markdown(r: dict) -> str:
    m, n, c = r["meta"], r["nightly"], r["catalogue"]
    scaled = "" if m["scale"] == 1 else f" at {m['scale']:g} of the issue's sizes"
    out = [f"# Incremental runs{' (quick smoke run)' if m['quick'] else scaled}", "",
           f"{m['started']} · {m['cores']} of {m['machine_cpus']} cores · load average {m['loadavg_start'][0]:.2f} at "
           f"start, {m['loadavg_end'][0]:.2f} at the end · {m['bench_seconds'] / 60:.1f} min · duplicates job, "
           f"{r['artifact']} (all-MiniLM-L6-v2 bi-encoder, fp32) · Spark session start {r['spark']['session_start_seconds']} s "
           "(excluded)", "", "## Targets", "", "| target | goal | measured | met | how |", "|---|---|---|---|---|"]
    for t in r["targets"]:
        val = f"{t['value']:.2f}x" if t["value"] is not None else "–"
        out.append(f"| {t['target']} | {t['goal']}x | {val} | {'yes' if t['met'] else '**no**'} | {t['note']} |")
    ch = n["change"]
    out += ["", f"## Nightly: day 2 = day 1's {n['pairs_day1']:,} pairs, {ch['edited']:,} titles edited, "
            f"{ch['removed']:,} pairs replaced by {ch['new']:,} new ones", "", *_run_table(n["runs"]), ""]
    ca = n["cache_after_day2"]
    out += [f"Day 1 / day 2 (cache): scoring {n['day1_over_day2_scoring']}x, wall {n['day1_over_day2_wall']}x, "
            f"engine {n['day1_over_day2_engine']}x. Day 2 without the cache / with it: {n['no_cache_over_cache_scoring']}x "
            f"(`--dedup run`), {n['per_batch_over_cache_scoring']}x (`--dedup batch`).",
            f"Cache after day 2: {ca['entries']:,} entries in {ca['batches']} batches, {ca['bytes']:,} bytes "
            f"({ca['bytes_per_entry']} bytes per entry: a 384-float embedding, its key and columns, in Parquet).",
            f"Day 2 outputs agree: cache against no cache max |score diff| {n['scores_cache_vs_no_cache']['max_abs_diff']:.1e}, "
            f"against per batch {n['scores_cache_vs_per_batch']['max_abs_diff']:.1e}.", ""]
    out += [f"## Catalogue: {c['pairs']:,} pairs of {c['products']:,} products, each in {c['pairs_per_product']} pairs "
            f"(Arrow batches of {c['arrow_batch_rows']:,} rows)", "", *_run_table(c["runs"]), "",
            f"Embed once per run / per batch: {c['run_over_batch_pairs_per_second']}x pairs/s; per batch encodes "
            f"{c['batch_over_run_real_tokens']}x the real tokens. Scores agree on {c['scores']['rows']:,} pairs: "
            f"max |diff| {c['scores']['max_abs_diff']:.1e}, labels {c['scores']['label_agreement']:.2%}.", "",
            "Spark overhead: scoring seconds minus (engine + tokenize worker seconds) / cores. Spark jobs: the "
            "actions the run started (input count, unit count, scoring, output and cache writes, their reads).", "",
            "## Where day 2's time goes (cached run): its Spark jobs, longest first", "",
            "| Spark job (call site) | seconds |", "|---|---|"]
    d2 = n["runs"][1]
    for name, seconds in sorted(d2["spark_job_seconds"], key=lambda j: -(j[1] or 0))[:8]:
        out.append(f"| {name} | {_fmt_seconds(seconds)} |")
    out += ["", f"{d2['spark_jobs']} Spark jobs, {sum(j[1] or 0 for j in d2['spark_job_seconds']):.1f} s of its "
            f"{d2['scoring_seconds']:.1f} scoring seconds.", ""]
    return "\n".join(out)


def _count(x) -> str:
    return "–" if x is None else f"{x:,}"


def _fmt_seconds(x) -> str:
    return "–" if x is None else f"{x:.2f}"


def _run_table(runs: list[dict]) -> list[str]:
    rows = ["| run | pairs | scoring s | wall s | engine s | tokenize s | texts encoded | real tokens | hits | misses | "
            "pairs/s | Spark jobs | Spark overhead s |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for x in runs:
        cache = x.get("cache", {})
        texts = "–" if x["texts_encoded"] is None else f"{x['texts_encoded']:,}"
        rows.append(f"| {x['run']} | {x['pairs']:,} | {x['scoring_seconds']:.1f} | {x['wall_seconds']:.1f} | "
                    f"{x['engine_seconds']:.1f} | {x['tokenize_seconds']:.1f} | {texts} | {x['real_tokens']:,} | "
                    f"{_count(cache.get('hits'))} | {_count(cache.get('misses'))} | {x['pairs_per_second']:.1f} | "
                    f"{x['spark_jobs']} | {x['spark_overhead_seconds']:.1f} |")
    return rows


def plot(r: dict, path: Path) -> bool:
    plt = harness.pyplot()
    if plt is None:
        return False
    n, c = r["nightly"], r["catalogue"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.6))
    runs = n["runs"]
    ax1.barh([x["run"] for x in runs][::-1], [x["scoring_seconds"] for x in runs][::-1],
             color=["#a0aec0" if "cache" not in x else "#2b6cb0" for x in runs][::-1])
    for i, x in enumerate(runs[::-1]):
        ax1.text(x["scoring_seconds"], i, f" {x['scoring_seconds']:.1f} s", va="center", fontsize=8)
    goal = runs[0]["scoring_seconds"] / TARGETS["nightly_day2_speedup"]
    ax1.axvline(goal, color="#dd6b20", ls=":", label=f"target: day 2 <= day 1 / {TARGETS['nightly_day2_speedup']:g}")
    ax1.set_xlabel("scoring seconds (lower is better)")
    ax1.set_title(f"Nightly, {n['pairs_day1']:,} pairs, 10% changed on day 2", fontsize=10)
    ax1.legend(fontsize=8, loc="lower right")
    once, batch = c["runs"]
    bars = [("per batch\n(--dedup batch)", batch["pairs_per_second"]), ("embed once per run\n(--dedup run)",
                                                                        once["pairs_per_second"])]
    ax2.barh([b[0] for b in bars], [b[1] for b in bars], color=["#a0aec0", "#2b6cb0"])
    for i, (_, v) in enumerate(bars):
        ax2.text(v, i, f" {v:.1f}", va="center", fontsize=8)
    ax2.axvline(batch["pairs_per_second"] * TARGETS["catalogue_embed_once_speedup"], color="#dd6b20", ls=":",
                label=f"target: {TARGETS['catalogue_embed_once_speedup']:g}x per batch")
    ax2.set_xlabel("pairs/s (higher is better)")
    ax2.set_title(f"Catalogue, {c['pairs']:,} pairs, each product in {c['pairs_per_product']} pairs", fontsize=10)
    ax2.legend(fontsize=8, loc="lower right")
    for ax in (ax1, ax2):
        ax.tick_params(axis="y", labelsize=8)
    m = r["meta"]
    scaled = "" if m["scale"] == 1 else f" · {m['scale']:g} of the issue's sizes"
    harness.save_figure(fig, path, f"accel-scoring incremental runs{scaled} · {m['started'][:10]} · MiniLM fp32, "
                                  f"{m['cores']} CPU cores · load average {m['loadavg_start'][0]:.1f} at start")
    return True


def write(results: dict, out: Path) -> list[Path]:
    return harness.write_results(out, "incremental", results, markdown, plot)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """--scale, then bench/run.py's own flags with their meaning (--quick, --commit, --out, ...)."""
    p = argparse.ArgumentParser(prog="python -m bench.incremental", description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=float, default=1.0,
                   help="the issue's sizes times this (pairs, products and the catalogue's Arrow batch); default: 1")
    own, rest = p.parse_known_args(argv)
    if not 0 < own.scale <= 1:
        p.error("--scale must be in (0, 1]")
    args = harness.parse_args(rest, p.prog, p.description)
    args.scale = own.scale
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    harness.prepare_environment()
    run(args.quick, args.out, args.work, args.cores, args.scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
