"""The run report: one self-contained HTML page (inline SVG, no script, nothing fetched) drawn
from the run summary alone, so any summary.json can be drawn again and the page can be tested
without Spark.

It shows whether the run passed (its exit code and why it failed), the headline figures and the
cost line, what was scored per second over the scoring stage, where task time went, rows by
status and invalid reason, padding efficiency, per-task durations with stragglers marked, the
devices that scored, and executors lost and S3 requests retried where there were any. Rows are
input rows; the chart, the tasks and the devices count the summary's `scored_unit`, which in the
run-level plan is the distinct texts, pairs or queries (jobs/timeline.py), and say so.
"""
from __future__ import annotations

import html
import statistics

from jobs.cost import describe, dollars
from jobs.summary_text import sizing_phrase, table_line

STRAGGLER = 1.5  # a task taking this many times the median task's seconds is marked
MAX_TASK_BARS = 200  # beyond this, the longest tasks are drawn and the rest counted

_LABEL, _BAR, _NOTE, _ROW = 300, 380, 220, 18  # horizontal bar chart geometry, px
_CHART_W, _CHART_H = 900, 160  # scored-per-second chart, px

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px auto; max-width: 960px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; border-bottom: 1px solid #ddd; }
.meta, .note { color: #555; } .figures { display: flex; gap: 32px; margin: 16px 0; }
.big { font-size: 26px; font-weight: 600; display: block; }
svg text { font: 12px system-ui, sans-serif; fill: #222; }
.bar { fill: #4c78a8; } .bad { fill: #f58518; } .straggler { fill: #e45756; } .warning { color: #b00; }
.failed { color: #fff; background: #b00; padding: 6px 10px; font-weight: 600; }
.passed { color: #1a6b1a; font-weight: 600; }
table { border-collapse: collapse; } td, th { padding: 2px 12px 2px 0; text-align: left; }
"""


def render(summary: dict) -> str:
    s = summary
    unit = s["scored_unit"]
    body = "\n".join([_headline(s), _throughput(s["timeline"], unit, s["scoring_seconds"]), _time_split(s),
                      _statuses(s), _padding(s), _tasks(s["tasks"], unit), _devices(s), _faults(s), _cost(s["cost"])])
    title = _esc(f"{s['job']} {s['run_date']}")
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            f"<style>{_STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")


def _headline(s: dict) -> str:
    cost = s["cost"]
    per_million = cost["usd_per_million_rows"]
    rate, sizing = s["rows_per_second"], sizing_phrase(s)
    figures = [
        ("rows-out", f"{s['rows_out']:,}", f"rows written of {s['rows_in']:,} read"),
        ("rows-per-second", f"{rate:,.1f}" if rate is not None else "–", "rows/s while scoring"),
        ("scoring-seconds", f"{s['scoring_seconds']:,.1f}",
         f"s scoring ({f'{sizing}; ' if sizing else ''}{s['wall_seconds']:,.1f} s in all)"),
        ("usd-per-million-rows", dollars(per_million) if per_million is not None else "–", "per million rows"),
    ]
    if s["scored_unit"] != "rows":  # the run-level plan scores each distinct unit once
        figures.insert(1, ("scored", f"{s['dedup']['units_scored']:,}",
                           f"distinct {s['scored_unit']} scored for those rows"))
    cells = "".join(f'<div><span class="big" id="{key}">{_esc(value)}</span>{_esc(label)}</div>'
                    for key, value, label in figures)
    line = describe(cost).replace("\n", " · ")
    outcome = (f'<p id="outcome" class="failed">failed, exit {s["exit_code"]}: {_esc(s["failure"])}</p>'
               if s["failure"] else '<p id="outcome" class="passed">passed, exit 0</p>')
    return (f"<h1>{_esc(s['job'])} · run_date {_esc(s['run_date'])}</h1>{outcome}"
            f'<p class="meta">{_esc(s["model"])} ({_esc(s["task"])}) on backend {_esc(s["backend"])} · '
            f"{_esc(s['input'])} → {_esc(s.get('written_to') or s['output'])} · {_esc(s['spark_application_id'])}</p>"
            + (f'<p class="meta" id="table">{_esc(table_line(s["table"]))}</p>' if s.get("table") else "")
            + f'<div class="figures">{cells}</div>'
            f'<p id="cost-line" class="{"warning" if "warning" in cost else "meta"}">{_esc(line)}</p>')


def _throughput(timeline: dict, unit: str, scoring_seconds: float) -> str:
    title = f"{unit.capitalize()} scored per second over the scoring stage"
    if not timeline["scored"]:
        return _section(title, f"<p>No {_esc(unit)} were scored.</p>")
    width = timeline["bucket_seconds"]
    rates = [n / width for n in timeline["scored"]]
    top = max(rates) or 1.0
    col = _CHART_W / len(rates)
    rects = "".join(
        f'<rect class="bar" x="{i * col:.1f}" y="{_CHART_H - r / top * _CHART_H:.1f}" width="{max(col - 1, 1):.1f}" '
        f'height="{r / top * _CHART_H:.1f}"><title>{i * width:,.1f}–{(i + 1) * width:,.1f} s: {r:,.0f} {unit}/s</title></rect>'
        for i, r in enumerate(rates))
    axis = (f'<text x="0" y="{_CHART_H + 14}">0 s</text>'
            f'<text x="{_CHART_W}" y="{_CHART_H + 14}" text-anchor="end">{len(rates) * width:,.1f} s</text>'
            f'<text x="4" y="12">{top:,.0f} {unit}/s</text>')
    note = (f'<p class="note">{sum(timeline["scored"]):,} {unit} scored, counted {timeline["counted"]}, per '
            f'{width:,.1f} s slice of the {scoring_seconds:,.1f} s scoring stage (empty slices: counting, joining '
            f'back and writing).</p>')
    return _section(title, _svg(_CHART_W, _CHART_H + 18, rects + axis) + note)


def _time_split(s: dict) -> str:
    task_seconds = sum(t.get("seconds", 0.0) for t in s["tasks"])
    tokenize, engine, udf = s["tokenize_seconds"], s["engine_seconds"], s["udf_seconds"]
    parts = [("tokenize", tokenize), ("engine", engine),
             ("other UDF work (batching, heads, checks)", max(udf - tokenize - engine, 0.0)),
             ("outside the UDF: engine load, read, shuffle, write", max(task_seconds - udf, 0.0))]
    total = sum(v for _, v in parts) or 1.0
    bars = _hbars([(label, v, f"{v:,.2f} s ({v / total:.0%})", "bar") for label, v in parts])
    note = (f'<p class="note">Seconds summed over {len(s["tasks"])} tasks, which run in parallel; the scoring '
            f"stage took {s['scoring_seconds']:,.1f} s of wall time. Time outside the UDF is each task's time "
            "from its start to its last batch, less its time in the UDF: an estimate.</p>")
    return _section("Where task time went", bars + note)


def _statuses(s: dict) -> str:
    status = _hbars([(name, n, f"{n:,}", "bar" if name == "ok" else "bad")
                     for name, n in (("ok", s["ok"]), ("invalid_input", s["invalid"]), ("error", s["error"]))])
    reasons = _hbars([(code, n, f"{n:,}", "bad") for code, n in s["invalid_by_reason"].items()])
    note = (f'<p class="note">{s["truncated"]:,} rows truncated to max_seq_len; '
            f"invalid or failed: {s['bad_fraction']:.2%}.</p>")
    return _section("Rows by status", status + "<h3>Invalid rows by reason</h3>" + reasons + note)


def _padding(s: dict) -> str:
    efficiency = s["padding_efficiency"]
    bars = _hbars([("real tokens", s["real_tokens"], f"{s['real_tokens']:,}", "bar"),
                   ("padded tokens", s["padded_tokens"], f"{s['padded_tokens']:,}", "bad")])
    text = f"{efficiency:.3f}" if efficiency is not None else "–"
    return _section("Padding efficiency", f'<p><span class="big">{text}</span>real / padded tokens</p>' + bars)


def _tasks(tasks: list[dict], unit: str) -> str:
    timed = [t for t in tasks if "seconds" in t]
    if not timed:
        return _section("Per-task durations", "<p>No task reported a batch.</p>")
    median = statistics.median(t["seconds"] for t in timed)
    slow = [t for t in timed if t["seconds"] > STRAGGLER * median]
    slow_keys = {(t["partition"], t["attempt"]) for t in slow}
    shown = sorted(sorted(timed, key=lambda t: -t["seconds"])[:MAX_TASK_BARS],
                   key=lambda t: (t["partition"] or 0, t["attempt"] or 0))
    bars = _hbars([(f"partition {t['partition']} attempt {t['attempt']} · {t['host']}", t["seconds"],
                    f"{t['seconds']:,.2f} s, {t['scored']:,} {unit}",
                    "straggler" if (t["partition"], t["attempt"]) in slow_keys else "bar") for t in shown])
    note = f"{len(timed)} tasks, median {median:,.2f} s; {len(slow)} over {STRAGGLER}x the median, in red"
    if slow:
        note += ": " + ", ".join(f"partition {t['partition']} ({t['seconds']:,.1f} s)" for t in slow[:10])
    if len(timed) > MAX_TASK_BARS:
        note += f"; the {MAX_TASK_BARS} longest are drawn"
    note = f'<p class="note">{_esc(note)}.</p>'
    return _section("Per-task durations", note + bars)


def _devices(s: dict) -> str:
    groups: dict[tuple, list] = {}
    for t in s["tasks"]:
        groups.setdefault((t["host"], t["device"], t.get("instance_type") or "–"), []).append(t.get("scored", 0))
    rows = "".join(f"<tr><td>{_esc(host)}</td><td>{_esc(device)}</td><td>{_esc(itype)}</td><td>{len(n)}</td>"
                   f"<td>{sum(n):,}</td></tr>" for (host, device, itype), n in sorted(groups.items()))
    table = ("<table><tr><th>host</th><th>device</th><th>instance type</th><th>tasks</th>"
             f"<th>{_esc(s['scored_unit'])} scored</th></tr>{rows}</table>")
    return _section("Devices", f"<p>backend {_esc(s['backend'])}, {s['engine_loads']} engine loads, "
                               f"{s['batch_retries']} batch retries</p>" + table)


def _faults(s: dict) -> str:
    """Executors that left during the run and S3 requests retried (jobs/executor_losses.py,
    jobs/s3_requests.py); nothing where there were none."""
    left = s.get("executors_left") or []
    s3 = s.get("s3") or {}
    boto3, s3a = s3.get("boto3_retries") or {}, s3.get("s3a_driver_jvm") or {}
    if not left and not any(boto3.values()) and not any(s3a.values()):
        return ""
    rows = "".join(f"<tr><td>{_esc(e['id'])}</td><td>{_esc(e['host'])}</td>"
                   f"<td>{'decommissioned' if e['decommissioned'] else 'lost'}</td>"
                   f"<td>{_esc(e['reason'] or '–')}</td></tr>" for e in left)
    executors = (f'<table id="executors-left"><tr><th>executor</th><th>host</th><th>how</th><th>reason</th></tr>'
                 f"{rows}</table>" if left else "<p>No executor left during the run.</p>")
    retried = (f'<p id="s3-retries">S3: boto3 retried {boto3.get("driver") or 0} requests on the driver and '
               f'{boto3.get("workers") or 0} on the workers; s3a on the driver made {s3a.get("requests") or 0} '
               f'requests, {s3a.get("throttled") or 0} throttled, {s3a.get("retries") or 0} retried.</p>')
    return _section("Executors lost and S3 retries", executors + retried)


def _cost(cost: dict) -> str:
    fields = ("instance_type", "usd_per_hour", "price_source", "instances", "instance_hours", "usd",
              "usd_per_million_rows")
    rows = "".join(f"<tr><th>{name}</th><td>{_esc('–' if cost[name] is None else cost[name])}</td></tr>"
                   for name in fields)
    return _section("Cost", f"<table>{rows}</table>"
                            '<p class="note">usd = usd_per_hour × instances × scoring hours; '
                            "usd_per_million_rows = usd / rows written × 10^6.</p>")


def _hbars(bars: list[tuple[str, float, str, str]]) -> str:
    """Horizontal bars, one per (label, value, note, css class), scaled to the largest value."""
    top = max((value for _, value, _, _ in bars), default=0) or 1
    out = []
    for i, (label, value, note, cls) in enumerate(bars):
        y, w = i * _ROW, value / top * _BAR
        out.append(f'<text x="{_LABEL - 6}" y="{y + 13}" text-anchor="end">{_esc(label)}</text>'
                   f'<rect class="{cls}" x="{_LABEL}" y="{y + 2}" width="{w:.1f}" height="{_ROW - 4}">'
                   f"<title>{_esc(label)}: {_esc(note)}</title></rect>"
                   f'<text x="{_LABEL + w + 6:.1f}" y="{y + 13}">{_esc(note)}</text>')
    return _svg(_LABEL + _BAR + _NOTE, len(bars) * _ROW, "".join(out))


def _svg(width: int, height: int, body: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img">{body}</svg>')


def _section(title: str, body: str) -> str:
    return f"<section><h2>{_esc(title)}</h2>{body}</section>"


def _esc(value) -> str:
    return html.escape(str(value))
