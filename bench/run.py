"""`make bench`: the engine, the jobs and their peers against the machine's limit, in one run.

    python -m bench.run              # the full run: about 10 minutes on 2 cores, artifacts compiled
    python -m bench.run --quick      # a smoke run of every path on tiny sizes (or BENCH_QUICK=1)
    python -m bench.run --commit     # a full run that replaces the committed bench/results/
    python -m bench.run --only host  # the host ceiling alone (bench/host_ceiling.py), merged into the results

On the seeded generator's data (bench/synthetic/datasets.py) and the packaged all-MiniLM-L6-v2, it
measures the bare engine per backend, precision and length mix; the duplicates and intent jobs
end to end on local Spark (steady state; the JVM start is reported on its own); the peers
(`predict_batch_udf` + transformers, an iterator pandas UDF + transformers, Ray Data) on the
same rows, model and cores; and the machine's fp32 GEMM peak. Every ratio is measured side by
side in this run. Writes results.json, results.md and results.png to --out (out/bench/results,
scratch), or with --commit to bench/results, the run the README and docs/performance.md quote.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import time
from pathlib import Path

import pandas as pd

from bench import harness
from bench.harness import (ROOT, RUN_DATE, compare_outputs, ensure_artifact, ensure_intent_artifact, log,
                           minilm_compile_args, minilm_dir, prepare_environment, side_texts)

TOKEN_BUDGET = 512  # the jobs' --batch-tokens default on the CPU (jobs/runner.py)
BUDGETS = (256, 512, 1024, 8192)  # the batch-sizing sweep


@dataclasses.dataclass(frozen=True)
class Sizes:
    pairs: int  # duplicates job fp32 against its bare engine
    peer_pairs: int  # the head to head: the job (fp32, int8) and the peers on the same pairs
    queries: int  # intent job
    # Each job again in a cold spark-submit at a size a nightly run scores (bench/scale.py's inputs):
    # where the bench's own rows take the bare engine 4-13 s, a cold run's fixed cost is half of it.
    nightly_pairs: int
    nightly_queries: int
    engine_texts: int  # per length mix, engine only
    gemm_seconds: float


FULL = Sizes(pairs=1200, peer_pairs=360, queries=4000, nightly_pairs=8000, nightly_queries=40_000, engine_texts=240,
             gemm_seconds=1.0)
QUICK = Sizes(pairs=96, peer_pairs=48, queries=300, nightly_pairs=192, nightly_queries=600, engine_texts=96,
              gemm_seconds=0.5)
# Each measured job: its script under jobs/, the name of its input and output under the work folder,
# and the artifact it scores with.
JOB_RUNS = {"duplicates": ("duplicates.py", "dup-fp32", "onnx-fp32-fused"),
            "query_intent": ("query_intent.py", "intent", "intent-fp32")}
OVERLAP_ARROW_ROWS = 64  # the --overlap A/B needs several Arrow batches per partition

TARGETS = {  # docs/performance.md, on a 2-core CPU
    "job_vs_bare_engine": 0.90,  # each job in a cold spark-submit of its own
    "fp32_vs_predict_batch_udf": 3.0,
    "useful_flops_vs_peak": 0.65,
    "int8_vs_predict_batch_udf": 5.0,
    "padding_efficiency": 0.90,
}


# ---------------------------------------------------------------- artifacts


# ---------------------------------------------------------------- data


def job_texts(left: list[str], right: list[str], cores: int) -> list[list[str]]:
    """What the job's engines encode: each distinct side text of the run once (a bi-encoder's
    default plan, jobs/distinct_plan.py), dealt to `cores` partitions."""
    distinct = list(dict.fromkeys(left + right))
    return [distinct[p::cores] for p in range(cores)]


# ---------------------------------------------------------------- main pieces

def engine_section(pool, arts: dict, mixes: dict, encoder, shape: dict, rounds: int) -> list[dict]:
    """Every artifact on every length mix, one process per core with one thread each (the job's
    layout); artifacts alternate within each of `rounds` rounds and the fastest round counts,
    so a burst of load on a shared machine hits them alike."""
    from bench import flop_ceiling

    rows = []
    cores = len(pool.workers)
    for mix, (texts, pairs) in mixes.items():
        enc = encoder.encode_pairs(*pairs) if pairs else encoder.encode(texts)
        lengths = enc.lengths
        flops = flop_ceiling.row_flops(lengths, shape)
        shares = [(enc.ids[p::cores], enc.type_ids[p::cores]) for p in range(cores)]
        best: dict = {}
        for _ in range(rounds):
            for name, (folder, backend) in arts.items():
                log(f"engine only: {name} on {mix} ({len(lengths)} rows)")
                r = pool.run(str(folder), backend, shares, threads=1, token_budget=TOKEN_BUDGET)
                if name not in best or r["seconds"] < best[name]["seconds"]:
                    best[name] = r
        for name, (folder, backend) in arts.items():
            r = best[name]
            rows.append({"artifact": name, "backend": backend, "mix": mix, "rows": len(lengths),
                         "mean_tokens": round(float(lengths.mean()), 1), **r,
                         "tokens_per_second": round(r["real_tokens"] / r["seconds"], 1),
                         "useful_gflops": round(flops / r["seconds"] / 1e9, 2)})
    return rows


def budget_sweep(pool, folder: Path, shares: list[list[str]], encoder, budgets) -> list[dict]:
    """The bare engine on half the job's texts at each token budget: padding against batch size."""
    encs = [encoder.encode(s[: (len(s) + 1) // 2]) for s in shares]
    rows = []
    for budget in budgets:
        log(f"batch sizing: {budget} tokens per device batch")
        r = pool.run(str(folder), "onnx", [(e.ids, e.type_ids) for e in encs], threads=1, token_budget=budget)
        rows.append({"batch_tokens": budget, **{k: r[k] for k in ("seconds", "rows", "rows_per_second",
                                                                   "padding_efficiency", "real_tokens")}})
    return rows


def bare_for_job(pool, folder: Path, shares: list[list[str]], encoder, shape: dict, layout: dict | None = None) -> dict:
    """The bare engine on exactly the texts the job's engines encode: in its best configuration
    (both layouts tried), or in `layout` (processes, threads) found best before."""
    from bench import flop_ceiling

    encs = [encoder.encode(s) for s in shares]
    flops = sum(flop_ceiling.row_flops(e.lengths, shape) for e in encs)
    feeds = [(e.ids, e.type_ids) for e in encs]
    if layout is None:
        top = pool.best(str(folder), "onnx", [], [], token_budget=TOKEN_BUDGET, shares=feeds)
    elif layout["processes"] == 1:
        merged = ([x for f in feeds for x in f[0]], [x for f in feeds for x in f[1]])
        top = pool.run(str(folder), "onnx", [merged], threads=layout["threads"], token_budget=TOKEN_BUDGET)
    else:
        top = pool.run(str(folder), "onnx", feeds, threads=1, token_budget=TOKEN_BUDGET)
    return {**top, "useful_flops": flops, "useful_gflops": round(flops / top["seconds"] / 1e9, 2)}


def target(name: str, value: float | None, note: str = "", label: str | None = None) -> dict:
    """`name`'s goal from TARGETS against `value`; `label` names a target judged more than once."""
    return harness.target(label or name, value, TARGETS[name], note)


def duplicates_section(pool, arts: dict, pairs: pd.DataFrame, encoder, shape: dict, cores: int, work: Path) -> dict:
    """The duplicates job (fp32) on the pairs, against its bare engine in its best layout."""
    from bench import job_bench
    from jobs import duplicates

    left, right = side_texts(pairs)
    _, name, artifact = JOB_RUNS["duplicates"]
    art = arts[artifact]
    log(f"duplicates job, fp32, {len(pairs)} pairs")
    s = job_bench.measured(duplicates.main, frame=pairs.drop(columns=["label"]), work=work, name=name, model=art,
                           partitions=cores)
    log("bare engine for it")
    bare = bare_for_job(pool, art, job_texts(left, right, cores), encoder, shape)
    return {"job": "duplicates", "precision": "fp32", "rows": s["rows_out"], "summary": s, "bare_engine": bare}


def intent_section(pool, arts: dict, queries: pd.DataFrame, encoder, shape: dict, cores: int, work: Path,
                   layout: dict) -> dict:
    from bench import job_bench
    from jobs import query_intent

    _, name, artifact = JOB_RUNS["query_intent"]
    log(f"intent job, {len(queries)} queries")
    s = job_bench.measured(query_intent.main, frame=queries.drop(columns=["intent"]), work=work, name=name,
                           model=arts[artifact], partitions=cores)
    q = queries["query"].tolist()
    bare = bare_for_job(pool, arts[artifact], [q[p::cores] for p in range(cores)], encoder, shape, layout)
    return {"job": "query_intent", "precision": "fp32", "rows": s["rows_out"], "summary": s, "bare_engine": bare}


def finish_job_rows(spark, jobs: list[dict], work: Path, cores: int) -> None:
    """Rates, the job against its bare engine, useful FLOP/s and the time split, per job."""
    from bench import job_bench
    from udfs.workloads import Duplicates, QueryIntent

    for j in jobs:
        s, bare = j["summary"], j["bare_engine"]
        wl = Duplicates() if j["job"] == "duplicates" else QueryIntent()
        data = work / f"{JOB_RUNS[j['job']][1]}.parquet"
        passthrough = job_bench.passthrough_seconds(spark, input=data, output=work / f"{j['job']}-passthrough",
                                                    workload=wl, partitions=cores)
        j["rows_per_second"] = round(j["rows"] / s["scoring_seconds"], 2)
        j["bare_engine_rows_per_second"] = round(j["rows"] / bare["seconds"], 2)
        # On real tokens per second: Spark's round-robin split dedupes a little differently from
        # the bare engine's even/odd split, so the two encode slightly different token counts.
        j["vs_bare_engine"] = round((s["real_tokens"] / s["scoring_seconds"]) / (bare["real_tokens"] / bare["seconds"]), 4)
        j["vs_bare_engine_rows"] = round(bare["seconds"] / s["scoring_seconds"], 4)
        # The job's useful FLOPs: the bare engine's, scaled to the real tokens the job encoded.
        j["useful_gflops"] = round(bare["useful_flops"] * s["real_tokens"] / bare["real_tokens"]
                                   / s["scoring_seconds"] / 1e9, 2)
        j["padding_efficiency"] = s["padding_efficiency"]
        j["time_split"] = job_bench.time_split(s, passthrough, cores)
        j["wall_seconds_including_planning"] = s["wall_seconds"]


def cold_job_rows(jobs: list[dict], arts: dict, work: Path, cores: int, sizes: Sizes) -> None:
    """Each job again as a nightly run meets it: its own cold spark-submit (bench/scale.py's), so
    the Python workers' start, the engine's load and the plan's Spark jobs fall inside the scoring
    seconds; the JVM's start and the query that sizes the input (`sizing_seconds`) come before
    them. Twice: on the steady-state run's rows, artifact and tasks, and on a nightly-sized input
    from the same generator. Both against the bare engine's real tokens/s on the first's texts;
    `overhead_seconds` is what the cold run took beyond the bare engine's time for its tokens, and
    `vs_bare_engine_sized` counts the sizing query's seconds in."""
    nightly = {"duplicates": ("pairs", sizes.nightly_pairs), "query_intent": ("queries", sizes.nightly_queries)}
    for j in jobs:
        script, name, artifact = JOB_RUNS[j["job"]]
        kind, rows = nightly[j["job"]]
        bare = j["bare_engine"]
        bare_tokens_per_second = bare["real_tokens"] / bare["seconds"]
        for key, data, n in (("cold", work / f"{name}.parquet", j["rows"]),
                             ("cold_nightly", harness.generated_input(kind, rows, work), rows)):
            out = work / f"{name}-{key}-out"
            shutil.rmtree(out, ignore_errors=True)
            log(f"{j['job']} job, cold spark-submit, {n:,} rows")
            s = harness.submit(script, ["--input", str(data), "--output", str(out), "--model", str(arts[artifact]),
                                        "--run-date", RUN_DATE, "--num-partitions", str(cores),
                                        "--progress-seconds", "3600"], cores=cores)
            if s.get("exit_code"):
                j[key] = {"rows": n, "exit_code": s["exit_code"], "error": s.get("error")}
                continue
            j[key] = {"rows": n, "scoring_seconds": s["scoring_seconds"], "wall_seconds_submit": s["wall_seconds_submit"],
                      "rows_per_second": round(n / s["scoring_seconds"], 2), "real_tokens": s["real_tokens"],
                      "overhead_seconds": round(s["scoring_seconds"] - s["real_tokens"] / bare_tokens_per_second, 2),
                      "vs_bare_engine": round(s["real_tokens"] / s["scoring_seconds"] / bare_tokens_per_second, 4),
                      "sizing_seconds": s["sizing_seconds"],
                      "vs_bare_engine_sized": round(s["real_tokens"] / (s["scoring_seconds"] + s["sizing_seconds"])
                                                    / bare_tokens_per_second, 4)}


def head_to_head(spark, arts: dict, pairs: pd.DataFrame, encoder, tokenizer_json: Path, shape: dict, cores: int,
                 work: Path, ray_python: Path) -> tuple[dict, dict, dict | None]:
    """On the same pairs: the job (fp32, int8), the --overlap A/B, and the peers.

    Returns (peers, overlap, int8 scores against fp32)."""
    from bench import flop_ceiling, job_bench, peers
    from jobs import duplicates
    from tokenizers import Tokenizer

    frame = pairs.drop(columns=["label"])
    rows, outputs = [], {}
    for precision in ("fp32", "int8"):
        art = arts[f"onnx-{precision}" if precision == "int8" else "onnx-fp32-fused"]
        if art is None:
            continue
        log(f"head to head: accel-scoring job, {precision}, {len(frame)} pairs")
        s = job_bench.measured(duplicates.main, frame=frame, work=work, name=f"peer-job-{precision}", model=art,
                               partitions=cores)
        outputs[precision] = s["output_path"]
        rows.append({"peer": f"accel-scoring job, onnx {precision}", "seconds": s["scoring_seconds"],
                     "output_path": s["output_path"], "padding_efficiency": s["padding_efficiency"],
                     "real_tokens": s["real_tokens"]})
    overlap = {"pairs": len(frame), "arrow_batch_rows": OVERLAP_ARROW_ROWS}
    for mode, extra in (("plain", []), ("overlap", ["--overlap"])):
        log(f"--overlap A/B: {mode}, {OVERLAP_ARROW_ROWS} rows per Arrow batch")
        s = job_bench.measured(duplicates.main, frame=frame, work=work, name=f"overlap-{mode}",
                               model=arts["onnx-fp32-fused"], partitions=cores,
                               extra=["--arrow-batch-rows", str(OVERLAP_ARROW_ROWS), *extra])
        overlap[f"{mode}_seconds"], overlap[f"{mode}_output"] = s["scoring_seconds"], s["output_path"]
    overlap["speedup"] = round(overlap["plain_seconds"] / overlap["overlap_seconds"], 4)
    overlap["scores"] = compare_outputs(overlap.pop("plain_output"), overlap.pop("overlap_output"))
    int8_vs_fp32 = compare_outputs(outputs["fp32"], outputs["int8"]) if "int8" in outputs else None

    head_path, warm_path = work / "peer-pairs.parquet", work / "peer-warmup.parquet"
    frame.to_parquet(head_path, index=False)
    frame.head(16).to_parquet(warm_path, index=False)
    hl, hr = side_texts(frame)
    tok = Tokenizer.from_file(str(tokenizer_json))
    tok.enable_truncation(256)
    naive_padding = peers.padding_of(tok, hl, hr)
    model = str(minilm_dir())
    for name, udf in (("predict_batch_udf + transformers", peers.predict_batch_peer(model)),
                      ("iterator pandas UDF + transformers", peers.iterator_peer(model))):
        log(f"head to head: {name}")
        r = peers.run_spark_peer(spark, udf, input=head_path, output=work / f"peer-{len(rows)}", partitions=cores,
                                 warmup=warm_path)
        rows.append({"peer": name, **r, **naive_padding})
    log("head to head: Ray Data")
    sides_path = work / "peer-sides.parquet"
    pd.DataFrame({"pair_id": frame["pair_id"], "left": hl, "right": hr}).to_parquet(sides_path, index=False)
    r = peers.run_ray_peer(ray_python, model_dir=model, input=sides_path, output=work / "peer-ray", cores=cores,
                           timeout=1800)
    rows.append({"peer": "Ray Data map_batches + transformers", **r, **({} if "skipped" in r else naive_padding)})
    ref = rows[0]
    peer_flops = flop_ceiling.row_flops(encoder.encode(hl + hr).lengths, shape)  # peers encode every side
    job_flops = sum(flop_ceiling.row_flops(encoder.encode(t).lengths, shape) for t in job_texts(hl, hr, cores))
    for p in rows:
        if "seconds" not in p:
            continue
        p["rows_per_second"] = round(len(frame) / p["seconds"], 2)
        p["useful_gflops"] = round((job_flops if p["peer"].startswith("accel") else peer_flops) / p["seconds"] / 1e9, 2)
        if p is not ref and p.get("output_path"):
            p["vs_job_fp32_scores"] = compare_outputs(ref["output_path"], p["output_path"])
    pbu = next((p for p in rows if p["peer"].startswith("predict_batch_udf") and "seconds" in p), None)
    for p in rows:
        if pbu and "seconds" in p:
            p["vs_predict_batch_udf"] = round(pbu["seconds"] / p["seconds"], 3)
    return {"rows": len(frame), "rows_are": "product pairs (cosine of two sides)", "runs": rows}, overlap, int8_vs_fp32


def judge(results: dict, int8_refused: str | None) -> list[dict]:
    """Each target of docs/performance.md against what this run measured."""
    f32 = next(j for j in results["jobs"] if j["job"] == "duplicates")
    runs = results["peers"]["runs"]
    pbu = next((p for p in runs if p["peer"].startswith("predict_batch_udf")), {})
    job_fp32 = next(p for p in runs if p["peer"].endswith("fp32"))
    job_int8 = next((p for p in runs if p["peer"].endswith("int8")), None)
    n = results["peers"]["rows"]
    peak = results["limit"]["gemm_peak_gflops"]
    return [
        *(cold_target(j, key) for j in results["jobs"] for key in ("cold", "cold_nightly")),
        target("fp32_vs_predict_batch_udf", job_fp32.get("vs_predict_batch_udf"),
               f"on {n} pairs: job {job_fp32.get('rows_per_second')} pairs/s vs "
               f"predict_batch_udf {pbu.get('rows_per_second')} pairs/s"),
        target("useful_flops_vs_peak", f32["vs_peak"],
               f"duplicates job fp32 {f32['useful_gflops']} useful GFLOP/s vs GEMM peak {peak} GFLOP/s "
               f"(bare engine: {f32['bare_engine']['vs_peak']:.1%})"),
        target("int8_vs_predict_batch_udf", job_int8.get("vs_predict_batch_udf") if job_int8 else None,
               f"on {n} pairs: job int8 {job_int8.get('rows_per_second')} pairs/s" if job_int8
               else harness.gate_verdict(int8_refused)),
        target("padding_efficiency", f32["padding_efficiency"], "duplicates job fp32 (real / computed tokens)"),
    ]


def cold_target(j: dict, key: str) -> dict:
    """job_vs_bare_engine for one of a job's cold runs (cold_job_rows)."""
    cold = j.get(key) or {}
    rows = cold.get("rows", j["rows"])
    texts = "the same texts" if key == "cold" else f"the {j['rows']:,}-row run's texts"
    return target("job_vs_bare_engine", cold.get("vs_bare_engine"),
                  f"real tokens/s, {j['job']} job fp32 on {rows:,} rows in a cold spark-submit vs the bare engine on "
                  f"{texts} ({j['bare_engine']['processes']} process(es) x {j['bare_engine']['threads']} thread(s)); "
                  f"{cold.get('overhead_seconds')} s beyond the bare engine's time for the run's tokens"
                  + (f"; {cold['vs_bare_engine_sized']:.3f} with the {cold['sizing_seconds']:.1f} s sizing the input "
                     f"counted in" if cold.get("vs_bare_engine_sized") is not None else "")
                  + (f"; steady state {j['vs_bare_engine']:.3f}" if key == "cold" else ""),
                  label=f"job_vs_bare_engine ({j['job']}, cold, {rows:,} rows)")


def run_host(args) -> dict:
    """The host-ceiling section alone: its two artifacts, one Spark session, bench/host_ceiling.py."""
    from bench import host_ceiling

    args.work.mkdir(parents=True, exist_ok=True)
    art_root = ROOT / "artifacts" / "bench"
    fp32, why = ensure_artifact(art_root / "minilm-fp32-fused", minilm_compile_args("--optimize", "fusion"))
    if fp32 is None:
        raise SystemExit(f"bench: the fp32 artifact failed to compile: {why}")
    intent = ensure_intent_artifact(art_root / "intent-centroid-minilm")
    log("starting Spark")
    spark, _ = harness.start_spark(args.cores)
    try:
        return host_ceiling.section(spark, fp32=fp32, intent=intent, work=args.work, cores=args.cores, quick=args.quick)
    finally:
        spark.stop()


def run(args) -> dict:
    from bench import flop_ceiling, host_ceiling
    from bench.synthetic import datasets
    from bench.engine_bench import EnginePool
    from udfs.tokenize import TextEncoder

    sizes = QUICK if args.quick else FULL
    cores, work = args.cores, args.work
    work.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    results: dict = {"meta": harness.machine_meta(quick=args.quick, cores=cores, sizes=dataclasses.asdict(sizes),
                                                  token_budget=TOKEN_BUDGET)}
    shape = flop_ceiling.model_shape(minilm_dir())
    results["model"] = {"name": "all-MiniLM-L6-v2", **shape,
                        "mflop_per_token_at_128": round(flop_ceiling.flops_per_token(shape, 128) / 1e6, 2)}
    pairs = datasets.product_pairs(sizes.pairs, seed=7)
    queries = datasets.search_queries(sizes.queries, seed=11)

    built = harness.main_artifacts(args.quick, work)
    arts, results["artifacts"] = built["paths"], built["record"]
    fp32, int8 = arts["onnx-fp32-fused"], arts["onnx-int8"]

    log("GEMM peak (1 of 3)")
    peak_runs = [flop_ceiling.gemm_peak(cores, seconds=sizes.gemm_seconds)]

    # Engine only: per artifact and length mix.
    tokenizer_json = fp32 / "tokenizer" / "tokenizer.json"
    encoder = TextEncoder(tokenizer_json, 256)
    left, right = side_texts(pairs)
    distinct = list(dict.fromkeys(left + right))[: sizes.engine_texts]
    mixes = {"product offers (mixed, job rows)": (distinct, None),
             "search queries (short)": (queries["query"].tolist()[: 2 * sizes.engine_texts], None)}
    if not args.quick:
        k = sizes.engine_texts // 3
        mixes["offer pairs as one sequence (long)"] = (None, (left[:k], right[:k]))
    measured = {"onnx fp32 fused": (fp32, "onnx"), "onnx fp32 unfused": (arts["onnx-fp32-plain"], "onnx")}
    if int8:
        measured["onnx int8 (gated)"] = (int8, "onnx")
    pool = EnginePool(cores)
    results["engine"] = engine_section(pool, measured, mixes, encoder, shape, rounds=1 if args.quick else 2)
    results["batch_sizing"] = budget_sweep(pool, fp32, job_texts(left, right, cores), encoder,
                                           (512, 8192) if args.quick else BUDGETS)
    log("GEMM peak (2 of 3)")
    peak_runs.append(flop_ceiling.gemm_peak(cores, seconds=sizes.gemm_seconds))

    # Jobs on local Spark, then the head to head.
    log("starting Spark")
    spark, jvm_seconds = harness.start_spark(cores)
    results["spark"] = {"master": f"local[{cores}]", "session_start_seconds": round(jvm_seconds, 2)}
    jobs = [duplicates_section(pool, arts, pairs, encoder, shape, cores, work)]
    layout = {"processes": jobs[0]["bare_engine"]["processes"], "threads": jobs[0]["bare_engine"]["threads"]}
    jobs.append(intent_section(pool, arts, queries, encoder, shape, cores, work, layout))
    pool.close()
    finish_job_rows(spark, jobs, work, cores)
    cold_job_rows(jobs, arts, work, cores, sizes)
    results["jobs"] = jobs
    shares = job_texts(left, right, cores)
    results["dedup"] = {"pairs": len(pairs), "side_texts": len(left) + len(right),
                        "distinct_global": len(set(left + right)), "encoded_by_job": sum(len(s) for s in shares),
                        "job_real_tokens": jobs[0]["summary"]["real_tokens"],
                        "bare_real_tokens": jobs[0]["bare_engine"]["real_tokens"],
                        "all_sides_real_tokens": int(encoder.encode(left + right).lengths.sum())}
    results["peers"], results["overlap"], results["int8_vs_fp32_job"] = head_to_head(
        spark, arts, pairs.head(sizes.peer_pairs), encoder, tokenizer_json, shape, cores, work, Path(args.ray_python))
    results["host"] = host_ceiling.section(spark, fp32=fp32, intent=arts["intent-fp32"], work=work, cores=cores,
                                   quick=args.quick)
    spark.stop()

    log("GEMM peak (3 of 3)")
    peak_runs.append(flop_ceiling.gemm_peak(cores, seconds=sizes.gemm_seconds))
    peak = max(r["peak_gflops"] for r in peak_runs)
    results["limit"] = {"gemm_peak_gflops": peak, "library": max(peak_runs, key=lambda r: r["peak_gflops"])["library"],
                        "runs": peak_runs, "vector_bound": flop_ceiling.vector_bound(cores)}
    rated = ([(f"engine only: {e['artifact']} on {e['mix']}", e) for e in results["engine"]]
             + [(f"job {j['job']} {j['precision']}", j) for j in jobs]
             + [(f"bare engine for job {j['job']} {j['precision']}", j["bare_engine"]) for j in jobs]
             + [(p["peer"], p) for p in results["peers"]["runs"]])
    for _, row in rated:
        if "useful_gflops" in row:
            row["vs_peak"] = round(row["useful_gflops"] / peak, 4)
    results["limit"]["above_ceiling"] = above_ceiling(rated)
    results["targets"] = judge(results, results["artifacts"]["onnx-int8"].get("refused"))
    harness.close_meta(results["meta"], t_start, "bench_seconds")
    return results


def above_ceiling(rated: list[tuple[str, dict]]) -> list[str]:
    """The named rows above the fp32 ceiling: a sign that the ceiling or the FLOP count is wrong.
    int8 rows run int8 GEMMs, which an fp32 ceiling does not bound: their share is shown, not judged."""
    return [name for name, row in rated if (row.get("vs_peak") or 0) > 1 and "int8" not in name]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return harness.parse_args(argv, "python -m bench.run", __doc__.split("\n\n")[0])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    prepare_environment()
    from bench import report

    if args.only == "host":
        previous = args.out / "results.json"
        results = json.loads(previous.read_text()) if previous.is_file() else {}
        results["host"] = run_host(args)
    else:
        results = run(args)
    paths = report.write(results, args.out)
    log("wrote " + ", ".join(str(p) for p in paths))
    for t in results.get("targets", []):
        log(f"target {t['target']}: {t['value']} (goal {t['goal']}) {'MET' if t['met'] else 'not met'} - {t['note']}")
    for j in results["host"]["jobs"]:
        log(f"host ceiling {j['job']}: {j['rows_per_second_per_core']} rows/s per core, "
            f"{j['vs_plain_tokenization']}x plain tokenization (goal {j['target']}x)")
    if args.only is None:  # "main" stops here
        from bench import incremental  # its own Spark session and files: incremental.json, .md, .png

        incremental.run(args.quick, args.out, args.work, args.cores)
        from bench import scale  # a cold spark-submit per run: scale.json, .md, .png

        scale.run(args.quick, args.out, args.work / "scale")
    return 0


if __name__ == "__main__":
    sys.exit(main())
