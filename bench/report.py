"""results.json, results.md (tables) and results.png (plot) from one bench run."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from bench import harness


def _fmt(x, digits: int = 1) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def _pct(x) -> str:
    return "–" if x is None else f"{x:.0%}"


SPLIT_NAMES = {"read_arrow": "read + Arrow", "validation": "validation", "tokenization": "tokenization",
               "batching_padding": "batching + padding", "engine": "engine (null)",
               "scatter_output": "scatter + output frame", "write": "write", "unaccounted": "unaccounted"}


def host_markdown(h: dict) -> list[str]:
    """The host ceiling (bench/host_ceiling.py): null-engine jobs against plain tokenization, the time
    split, and the cores one accelerator needs."""
    out = ["## Host ceiling: both jobs with a zero-cost engine", "",
           f"{h['started']} · {h['cores']} of {h['machine_cpus']} cores of {h['cpu']} · load average "
           f"{h['loadavg_start'][0]:.2f} at start, {h['loadavg_end'][0]:.2f} at the end · {h['seconds']:.0f} s"
           f"{' · quick smoke run' if h.get('quick') else ''}. Artifacts: the compiled ones with their graph "
           f"replaced ({h['artifacts']['graph']}), manifest and sha256 rebuilt (bench/null_artifact.py). "
           f"Plain tokenization: the artifact's tokenizer, `encode_batch`, one thread, every text (both sides "
           f"of every pair; every query). Rows/s per core: the job's rows over its scoring seconds over "
           f"{h['cores']} cores.", "",
           "| job | rows | job rows/s | per core | plain tokenization rows/s (1 thread; seconds before, after) "
           "| per core / plain | goal | met | padding eff. | sequences per row | with "
           f"{h['jobs'][0]['accelerator_arrow_batch']['arrow_batch_rows']:,} rows per Arrow batch: per core, / plain "
           "| with the other `--dedup`: per core, / plain | single texts tokenized by | with `tokenizers` alone: "
           "per core, / plain | pass-through (the per-batch plan, no model): per core, / plain | the session's "
           "first run (JVM warming up): per core, / plain |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for j in h["jobs"]:
        before, after = j["plain_tokenization_seconds"]
        big = j["accelerator_arrow_batch"]
        out.append(f"| {j['job']} | {j['rows']:,} | {_fmt(j['rows_per_second'])} | {_fmt(j['rows_per_second_per_core'])} | "
                   f"{_fmt(j['plain_tokenization_rows_per_second'])} ({before:.1f} s, {after:.1f} s) | "
                   f"{j['vs_plain_tokenization']:.2f}x | {j['target']}x | {'yes' if j['met'] else '**no**'} | "
                   f"{_fmt(j['padding_efficiency'], 3)} | {j['sequences_per_row']:.2f} | "
                   f"{_fmt(big['rows_per_second_per_core'])}, {big['vs_plain_tokenization']:.2f}x | "
                   + (f"`{j['other_dedup']['dedup']}` (default `{j['dedup']}`): "
                      f"{_fmt(j['other_dedup']['rows_per_second_per_core'])}, "
                      f"{j['other_dedup']['vs_plain_tokenization']:.2f}x |" if "other_dedup" in j else "– |")
                   + f" {j.get('single_text_route', 'tokenizers')} | "
                   + (f"{_fmt(j['tokenizers_alone']['rows_per_second_per_core'])}, "
                      f"{j['tokenizers_alone']['vs_plain_tokenization']:.2f}x |" if "tokenizers_alone" in j else "– |")
                   + "".join(f" {_fmt(j[k]['rows_per_second_per_core'])}, {j[k]['vs_plain_tokenization']:.2f}x |"
                             if k in j else " – |" for k in ("passthrough", "first_run")))
    keys = list(SPLIT_NAMES)
    out += ["", "Time split of each job's scoring wall time (read + Arrow and write: pass-through jobs with the "
            "same plan; tokenization and engine: the job's own metrics; validation, batching + padding and "
            "scatter + output: the rest of the job's worker time, divided as a bench-side replay of the same "
            "Arrow batches measured it; worker seconds over the cores):", "",
            "| job | seconds | " + " | ".join(SPLIT_NAMES[k] for k in keys) + " |", "|---|---|" + "---|" * len(keys)]
    for j in h["jobs"]:
        ts = j["time_split"]
        out.append(f"| {j['job']} | {j['scoring_seconds']:.1f} | " +
                   " | ".join(f"{ts[k]:.2f} s ({ts['fractions'][k]:.0%})" for k in keys) + " |")
    out += ["", "Bench-side replay of the worker code (one process, one thread, no Spark): "
            + "; ".join(f"{j['job']} {j['worker_replay']['rows']:,} rows in {j['worker_replay']['arrow_batches']} "
                        f"Arrow batches at {_fmt(j['worker_replay']['rows_per_second'])} rows/s ("
                        + ", ".join(f"{SPLIT_NAMES[k]} {v:.0%}" for k, v in j['worker_replay']['fractions'].items())
                        + ")" for j in h["jobs"]) + ".",
            "", "### Cores per accelerator", "",
            "Executor cores that keep one device busy: the device's published rate (BERT-base, 128 tokens per "
            "sequence), turned into the job's rows/s by the sequences each row sends to the device in this run "
            "(the job's real tokens over the mean tokens of an encoded text), over this run's host rows/s per "
            "core. Shorter sequences run faster on a device than at the published 128 tokens, so these "
            "counts are a floor; the last column assumes the device's time scales with the padded tokens of "
            "the job's own sequences, a ceiling. EC2 vCPUs per device: "
            f"{h['vcpus_per_device_on_ec2']}.", "",
            "| device | source (quoted, not measured here) | job | device sequences/s | sequences per row | "
            "device rows/s | host rows/s per core | cores per device | padded tokens per sequence | "
            "cores if the rate scales with tokens |", "|---|---|---|---|---|---|---|---|---|---|"]
    for c in h["cores_per_device"]:
        out.append(f"| {c['device']} | {c['source']} | {c['job']} | {c['device_sequences_per_second']:,} | "
                   f"{c['sequences_per_row']:.2f} | {c['device_rows_per_second']:,} | "
                   f"{_fmt(c['host_rows_per_second_per_core'])} | **{c['cores']}** | "
                   f"{c['padded_tokens_per_sequence']:.1f} | {c['cores_token_scaled']} |")
    return out + [""]


def _gemm_run(p: dict, cores: int) -> str:
    """One GEMM measurement: per library where it measured several (bench/flop_ceiling.py)."""
    per = p.get("libraries") or {p["library"]: p}
    return ", ".join(f"{lib} {g['processes_gflops']} GFLOP/s as {cores} processes x 1 thread, {g['threads_gflops']} "
                     f"as 1 x {cores}" for lib, g in per.items())


def markdown(r: dict) -> str:
    if "meta" not in r:  # a results folder with the host section alone (bench.run --only host)
        return "\n".join(["# accel-scoring benchmark: host ceiling only", "", *host_markdown(r["host"])])
    m, lim = r["meta"], r["limit"]
    load = f"load average {m['loadavg_start'][0]:.2f} at start, {m['loadavg_end'][0]:.2f} at the end"
    out = [f"# accel-scoring benchmark{' (quick smoke run)' if m['quick'] else ''}", "",
           f"{m['started']} · {m['cores']} of {m['machine_cpus']} cores of {m['cpu']} · {load} · "
           f"{m['bench_seconds'] / 60:.1f} min · model {r['model']['name']} "
           f"({r['model']['mflop_per_token_at_128']} MFLOP per real token at 128 tokens) · "
           f"fp32 GEMM peak {lim['gemm_peak_gflops']} GFLOP/s on {m['cores']} cores"
           + (f" ({lim['library']}; {lim['vector_bound']['gflops']} GFLOP/s from the vector width and clock, "
              f"{lim['vector_bound']['fp32_lanes']} fp32 lanes at {lim['vector_bound']['ghz']} GHz)"
              if lim.get("vector_bound", {}).get("gflops") else ""), "",
           *([f"**Above the measured ceiling** (the ceiling or the FLOP count is wrong): "
              f"{', '.join(lim['above_ceiling'])}", ""] if lim.get("above_ceiling") else []),
           "## Targets", "", "| target | goal | measured | met | how |", "|---|---|---|---|---|"]
    for t in r["targets"]:
        goal = _pct(t["goal"]) if t["goal"] < 1 else f"{t['goal']}x"
        val = (f"{t['value']:.1%}" if t["goal"] < 1 else f"{t['value']:.2f}x") if t["value"] is not None else "–"
        met = {True: "yes", False: "**no**", None: "n/a"}[t["met"]]
        out.append(f"| {t['target']} | {goal} | {val} | {met} | {t['note']} |")

    out += ["", f"## Head to head: duplicates on {r['peers']['rows']} pairs, same model, data and cores", "",
            "| run | pairs/s | vs predict_batch_udf | useful GFLOP/s | of peak | padding eff. | scores vs job fp32 |",
            "|---|---|---|---|---|---|---|"]
    for p in r["peers"]["runs"]:
        if "skipped" in p:
            out.append(f"| {p['peer']} | skipped: {p['skipped'][:160]} | | | | | |")
            continue
        cmp = p.get("vs_job_fp32_scores")
        cmp_s = f"max diff {cmp['max_abs_diff']:.4f}, labels {cmp['label_agreement']:.1%}" if cmp else "–"
        out.append(f"| {p['peer']} | {_fmt(p['rows_per_second'])} | {_fmt(p.get('vs_predict_batch_udf'), 2)}x | "
                   f"{_fmt(p['useful_gflops'])} | {_pct(p.get('vs_peak'))} | {_fmt(p.get('padding_efficiency'), 3)} | "
                   f"{cmp_s} |")

    out += ["", "## Jobs end to end (steady state, and cold) against the bare engine", "",
            "| job | rows | rows/s | bare engine rows/s | job / bare | useful GFLOP/s | "
            "of peak | padding eff. | read+shuffle+write | tokenize | engine | other Python |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for j in r["jobs"]:
        ts = j["time_split"]["fractions"]
        out.append(f"| {j['job']} {j['precision']} | {j['rows']:,} | {_fmt(j['rows_per_second'])} | "
                   f"{_fmt(j['bare_engine_rows_per_second'])} ({j['bare_engine']['processes']}x"
                   f"{j['bare_engine']['threads']}) | {_pct(j['vs_bare_engine'])} | "
                   f"{_fmt(j['useful_gflops'])} | "
                   f"{_pct(j['vs_peak'])} | {_fmt(j['padding_efficiency'], 3)} | {_pct(ts['read_shuffle_write'])} | "
                   f"{_pct(ts['tokenize'])} | {_pct(ts['engine'])} | {_pct(ts['other_python'])} |")
    out += ["", "Spark session start (JVM, excluded from the steady-state rows): "
            f"{r['spark']['session_start_seconds']} s. "
            "Time split: fractions of the steady-state job's scoring wall time; worker seconds divided by the cores."]
    out += ["", "### Cold: each job in a spark-submit of its own, as a nightly run meets it", "",
            "| job | rows | scoring s | rows/s | real tokens | job / bare (real tokens/s) | beyond the bare engine, s "
            "| sizing the input before scoring, s | job / bare, sizing counted in |",
            "|---|---|---|---|---|---|---|---|---|"]
    for j in r["jobs"]:
        for key in ("cold", "cold_nightly"):
            c = j.get(key)
            if not c:
                continue
            if "exit_code" in c:
                out.append(f"| {j['job']} | {c['rows']:,} | failed: exit {c['exit_code']} | – | – | – | – | – | – |")
                continue
            out.append(f"| {j['job']} | {c['rows']:,} | {_fmt(c['scoring_seconds'])} | {_fmt(c['rows_per_second'])} | "
                       f"{c['real_tokens']:,} | {_pct(c['vs_bare_engine'])} | {_fmt(c['overhead_seconds'])} | "
                       f"{_fmt(c.get('sizing_seconds'))} | {_pct(c.get('vs_bare_engine_sized'))} |")
    out += ["", "The first row of each job: the steady-state run's rows, artifact and tasks; the second: a "
            "nightly-sized input from the same generator. The Python workers' start, the engine's load and the "
            "plan's Spark jobs fall inside the scoring seconds; the JVM's start and the one query that sizes the input "
            "(rows per partition, repeated ids: jobs/spark_io.py `profile`) come before them. Both are judged against "
            "the bare engine's real tokens/s on the first row's texts; the last column is the scoring time beyond "
            "what the bare engine needs for the run's real tokens."]
    d = r.get("dedup")
    if d:
        out += ["", f"Distinct texts: the {d.get('pairs', d['side_texts'] // 2):,} pairs' {d['side_texts']:,} side texts hold {d['distinct_global']:,} distinct ones; "
                f"the job encoded {d['job_real_tokens']:,} real tokens where encoding every side would take "
                f"{d['all_sides_real_tokens']:,} ({d['job_real_tokens'] / d['all_sides_real_tokens']:.0%})."]
    if r.get("int8_vs_fp32_job"):
        c = r["int8_vs_fp32_job"]
        out += [f"int8 job against the fp32 job on {c['rows']:,} pairs: labels agree on {c['label_agreement']:.2%}, "
                f"p99 |score diff| {c['p99_abs_diff']:.4f}, max {c['max_abs_diff']:.4f}."]

    if r.get("overlap"):
        o = r["overlap"]
        out += [f"Tokenization overlapped with the engine (`--overlap`), duplicates fp32 on {o['pairs']:,} pairs "
                f"with {o.get('arrow_batch_rows', 'default')} rows per Arrow batch: "
                f"{o['overlap_seconds']:.1f} s against {o['plain_seconds']:.1f} s without ({o['speedup']:.2f}x); "
                f"scores identical: max |diff| {o['scores']['max_abs_diff']:.1e}."]
    out += ["", "## Engine only (texts tokenized in advance; best of processes x threads)", "",
            "| artifact | length mix | rows | mean tokens | rows/s | tokens/s | useful GFLOP/s | of peak | "
            "best config | padding eff. |", "|---|---|---|---|---|---|---|---|---|---|"]
    for e in r["engine"]:
        out.append(f"| {e['artifact']} | {e['mix']} | {e['rows']:,} | {e['mean_tokens']} | {_fmt(e['rows_per_second'])} | "
                   f"{_fmt(e['tokens_per_second'], 0)} | {_fmt(e['useful_gflops'])} | {_pct(e.get('vs_peak'))} | "
                   f"{e['processes']}x{e['threads']} | {_fmt(e['padding_efficiency'], 3)} |")

    if r.get("batch_sizing"):
        out += ["", "## Batch sizing (bare engine, fp32, the duplicates job's texts, one process per core)", "",
                "| padded tokens per device batch | rows/s | padding eff. | seconds |", "|---|---|---|---|"]
        for b in r["batch_sizing"]:
            out.append(f"| {b['batch_tokens']:,} | {_fmt(b['rows_per_second'])} | {_fmt(b['padding_efficiency'], 3)} | "
                       f"{_fmt(b['seconds'], 2)} |")
    out += ["", "## Artifacts", ""]
    for name, a in r["artifacts"].items():
        if "refused" in a:
            out.append(f"- **{name}: refused by the parity gate** – {a['refused']}")
            continue
        par = a["parity"]
        extra = (f", labels agree {par['label_agreement']:.2%}, p99 |score diff| {par['p99_score_diff']:.4f} on "
                 f"{par['score_rows']} rows" if "label_agreement" in par else "")
        out.append(f"- {name}: {a['path']}, {a['precision']}, graph {a['graph']}, parity max |diff| "
                   f"{par.get('max_abs_diff', 0):.2e}{extra}")
    out += ["", "GEMM peak, measured at the start, after the engine section and at the end (the best counts): " +
            "; ".join(_gemm_run(p, m["cores"]) for p in lim["runs"]) +
            f" (square n = {lim['runs'][0].get('sizes', lim['runs'][0].get('n'))}).", ""]
    if r.get("host"):
        out += host_markdown(r["host"])
    return "\n".join(out)


def host_panel(ax, h: dict) -> None:
    """Null-engine job rows/s per core over plain tokenization on one thread, per job and Arrow
    batch size, against the goal."""
    jobs = h["jobs"]
    y = np.arange(len(jobs))
    big = jobs[0]["accelerator_arrow_batch"]["arrow_batch_rows"]
    bars = [("defaults: 4,096 rows per Arrow batch, the job's --dedup", [j["vs_plain_tokenization"] for j in jobs],
             "#2b6cb0"),
            (f"{big:,} rows per Arrow batch", [j["accelerator_arrow_batch"]["vs_plain_tokenization"] for j in jobs],
             "#90cdf4")]
    if all("other_dedup" in j for j in jobs):
        bars.append(("the other --dedup level", [j["other_dedup"]["vs_plain_tokenization"] for j in jobs], "#9ae6b4"))
    if all("tokenizers_alone" in j for j in jobs):
        bars.append(("tokenizers alone (no flash-tokenizer route)", [j["tokenizers_alone"]["vs_plain_tokenization"]
                                                                    for j in jobs], "#d6bcfa"))
    height = 0.8 / len(bars)
    for n, (label, values, color) in enumerate(bars):
        offset = 0.4 - height * (n + 0.5)
        ax.barh(y + offset, values, height, color=color, label=label)
        for i, v in enumerate(values):
            ax.text(v, i + offset, f" {v:.2f}x", va="center", fontsize=8)
    ax.axvline(jobs[0]["target"], color="#c53030", ls="--", label=f"goal {jobs[0]['target']}x")
    ax.set_yticks(y, [j["job"] for j in jobs])
    ax.set_xlabel("job rows/s per core (zero-cost engine) / plain tokenization (1 thread)", fontsize=9)
    ax.set_title(f"Host ceiling · {h['started'][:10]} · load average {h['loadavg_start'][0]:.1f} at start", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")


def plot(r: dict, path: Path) -> bool:
    plt = harness.pyplot()
    if plt is None:
        return False
    if "peers" not in r:  # host ceiling only
        fig, ax = plt.subplots(figsize=(7, 3.5))
        host_panel(ax, r["host"])
        harness.save_figure(fig, path)
        return True
    runs = [p for p in r["peers"]["runs"] if "rows_per_second" in p]
    panels = 3 if r.get("host") else 2
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 4.8))
    ax1, ax2 = axes[0], axes[1]
    if r.get("host"):
        host_panel(axes[2], r["host"])
    names = [p["peer"].replace(" + transformers", "\n+ transformers").replace("accel-scoring job, ", "job ")
             for p in runs]
    colors = ["#2b6cb0" if p["peer"].startswith("accel") else "#a0aec0" for p in runs]
    ax1.barh(names[::-1], [p["rows_per_second"] for p in runs][::-1], color=colors[::-1])
    for i, p in enumerate(runs[::-1]):
        ax1.text(p["rows_per_second"], i, f" {p['rows_per_second']:.1f}", va="center", fontsize=8)
    ax1.set_xlabel("pairs/s (higher is better)")
    ax1.set_title(f"Duplicates, {r['peers']['rows']} pairs, MiniLM, {r['meta']['cores']} CPU cores", fontsize=10)
    peak = r["limit"]["gemm_peak_gflops"]
    bars = [(f"job {j['job']} {j['precision']}", j["useful_gflops"]) for j in r["jobs"]]
    bars += [(f"bare engine ({j['job']} {j['precision']})", j["bare_engine"]["useful_gflops"]) for j in r["jobs"]]
    bars += [(p["peer"].replace(" + transformers", "").replace("accel-scoring job, ", "head-to-head job "),
              p["useful_gflops"]) for p in runs if not p["peer"].startswith("accel")]
    ax2.barh([b[0] for b in bars][::-1], [b[1] for b in bars][::-1], color="#48bb78")
    ax2.axvline(peak, color="#c53030", ls="--", label=f"fp32 GEMM peak {peak} GFLOP/s")
    ax2.axvline(0.65 * peak, color="#dd6b20", ls=":", label="65% of peak (target)")
    ax2.set_xlabel("useful GFLOP/s (real tokens only; int8 counted at fp32 FLOPs)")
    ax2.legend(fontsize=8, loc="lower right")
    ax2.tick_params(axis="y", labelsize=8)
    ax1.tick_params(axis="y", labelsize=8)
    load = r["meta"]["loadavg_start"][0]
    harness.save_figure(fig, path, f"accel-scoring bench · {r['meta']['started'][:10]} · load average {load:.1f} at start")
    return True


def write(results: dict, out: Path) -> list[Path]:
    return harness.write_results(out, "results", results, markdown, plot)
