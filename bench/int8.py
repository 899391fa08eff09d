"""`make bench-int8`: the int8 duplicates job against the fp32 one, side by side, on this CPU.

    python -m bench.int8              # 1,200 pairs, 3 rounds; writes out/bench/results/int8.{json,md}
    python -m bench.int8 --commit     # the same, into the committed bench/results/

int8 kernels differ by instruction set (engines/onnxruntime_cpu.py), so the run records the
CPU's int8 features next to the gate's figures and both jobs' rates. The artifacts are `make
bench`'s (bench/harness.py `main_artifacts`: the gate on 600 held-out pairs). In each round the fp32
job runs, then the int8 one, on the same pairs; the fastest round of each counts, so a burst of
load from other work on a shared machine hits both alike. The load average is recorded per run.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from bench import harness

def measure(args) -> dict:
    from bench import job_bench
    from bench.synthetic import datasets
    from engines import hardware
    from jobs import duplicates

    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    results: dict = {"meta": harness.machine_meta(cores=args.cores, cpu_features=list(hardware.cpu_features() or ()),
                                                  pairs=args.pairs, rounds=args.rounds)}
    built = harness.main_artifacts(False, work)
    results["artifacts"] = {k: v for k, v in built["record"].items() if k in ("onnx-fp32-fused", "onnx-int8")}
    arts = {"fp32": built["paths"]["onnx-fp32-fused"], "int8": built["paths"]["onnx-int8"]}
    frame = datasets.product_pairs(args.pairs, seed=7).drop(columns=["label"])
    spark, _ = harness.start_spark(args.cores)
    runs, outputs = [], {}
    for round_ in range(args.rounds):
        for precision, art in arts.items():
            if art is None:
                continue
            harness.log(f"round {round_ + 1} of {args.rounds}: duplicates job, {precision}, {len(frame)} pairs")
            load = os.getloadavg()[0]
            s = job_bench.measured(duplicates.main, frame=frame, work=work, name=f"int8-ab-{precision}", model=art,
                                   partitions=args.cores)
            outputs[precision] = s["output_path"]
            runs.append({"round": round_ + 1, "precision": precision, "scoring_seconds": s["scoring_seconds"],
                         "pairs_per_second": round(len(frame) / s["scoring_seconds"], 2),
                         "loadavg_before": round(load, 2), "loadavg_after": round(os.getloadavg()[0], 2)})
    spark.stop()
    results["runs"] = runs
    best = {p: min(r["scoring_seconds"] for r in runs if r["precision"] == p) for p in arts if arts[p]}
    results["best_pairs_per_second"] = {p: round(len(frame) / s, 2) for p, s in best.items()}
    if "int8" in best:
        results["int8_vs_fp32_job"] = round(best["fp32"] / best["int8"], 3)
        results["scores"] = harness.compare_outputs(outputs["fp32"], outputs["int8"])
    else:
        results["int8_refused"] = harness.gate_verdict(results["artifacts"]["onnx-int8"].get("refused"))
    return results


def markdown(r: dict) -> str:
    m = r["meta"]
    out = [f"# int8 against fp32, duplicates job ({m['started']})", "",
           f"{m['cores']} cores of {m['cpu']} (int8 features: {', '.join(m['cpu_features']) or 'none'}) · "
           f"load average {m['loadavg_start'][0]:.2f} at the start, {m['loadavg_end'][0]:.2f} at the end · "
           f"{m['pairs']:,} pairs · {m['rounds']} rounds, fp32 then int8 in each, the fastest counts", ""]
    int8 = r["artifacts"]["onnx-int8"]
    if "refused" in int8:
        return "\n".join(out + [f"int8: {r['int8_refused']}", ""])
    g, q = int8["parity"], int8.get("quantization") or {}
    out += [f"Gate (compile, on this CPU): labels agree on {g['label_agreement']:.2%} of {g['score_rows']} held-out "
            f"pairs, p99 |score diff| {g['p99_score_diff']:.4f}; quantization: {q.get('method')}, "
            f"{q.get('kept_fp32')} MatMuls kept fp32.", "",
            "| round | precision | pairs/s | load before | load after |", "|---|---|---|---|---|"]
    out += [f"| {x['round']} | {x['precision']} | {x['pairs_per_second']:.1f} | {x['loadavg_before']:.2f} | "
            f"{x['loadavg_after']:.2f} |" for x in r["runs"]]
    best, s = r["best_pairs_per_second"], r["scores"]
    out += ["", f"int8 job / fp32 job: **{r['int8_vs_fp32_job']:.2f}x** ({best['int8']} vs {best['fp32']} pairs/s). "
            f"int8 scores against the fp32 job's: labels agree on {s['label_agreement']:.2%}, p99 |diff| "
            f"{s['p99_abs_diff']:.4f}.", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.int8", description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=1200, help="pairs each job scores; default: 1200")
    p.add_argument("--rounds", type=int, default=3, help="fp32-then-int8 rounds; default: 3")
    p.add_argument("--cores", type=int, default=min(2, os.cpu_count() or 1), help="cores to use; default: 2")
    p.add_argument("--work", type=Path, default=harness.ROOT / "out" / "bench", help="scratch data; default: out/bench")
    p.add_argument("--commit", action="store_true", help="write to the committed bench/results/ instead of <work>/results")
    args = p.parse_args(argv)
    harness.prepare_environment()
    t0 = time.time()
    results = measure(args)
    harness.close_meta(results["meta"], t0)
    out = harness.COMMITTED if args.commit else args.work / "results"
    harness.log("wrote " + ", ".join(map(str, harness.write_results(out, "int8", results, markdown))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
