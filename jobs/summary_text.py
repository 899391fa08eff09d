"""The run summary as a person reads it at the end of a run (the JSON line is for machines)."""
from __future__ import annotations

from jobs.cost import describe


def _n(value) -> str:
    return f"{int(value or 0):,}"


def _share(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole > 0 else "–"


def sizing_phrase(s: dict) -> str:
    """The seconds before the scoring seconds (reading the input and the query that sizes the run),
    as the console and the report page put them; empty for a summary from before they were kept."""
    return f"after {s['sizing_seconds']:,.1f} s sizing the input" if s.get("sizing_seconds") is not None else ""


def table_line(table: dict) -> str:
    """What the run committed to a table (jobs/tables.py): an Iceberg snapshot, or a registered partition."""
    if table["format"] == "iceberg":
        return (f"Iceberg {table['name']} snapshot {table['snapshot_id']} (parent {table['parent_snapshot_id']}):"
                f" {_n(table['added_records'])} rows added, {_n(table['deleted_records'])} replaced")
    return f"{table['name']} (Parquet) partition {table['partition']} registered"


def render(summary: dict) -> str:
    s = summary
    rate = s.get("rows_per_second")
    reasons = ", ".join(f"{code} {_n(count)}" for code, count in (s.get("invalid_by_reason") or {}).items() if count)
    worker = float(s.get("udf_seconds") or 0.0)
    engine, tokenize = float(s.get("engine_seconds") or 0.0), float(s.get("tokenize_seconds") or 0.0)
    target = s.get("written_to") or f"{s['output']}/run_date={s['run_date']}"
    sizing = sizing_phrase(s)
    lines = [
        f"done: {_n(s['rows_out'])} of {_n(s['rows_in'])} rows in {s['scoring_seconds']:.1f} s"
        f" ({rate:,.1f} rows/s) -> {target}" if rate is not None else
        f"done: {_n(s['rows_out'])} of {_n(s['rows_in'])} rows -> {target}",
        f"  rows      ok {_n(s['ok'])} · invalid {_n(s['invalid'])}{f' ({reasons})' if reasons else ''}"
        f" · error {_n(s['error'])} · truncated {_n(s.get('truncated'))}",
        f"  time      scoring {s['scoring_seconds']:.1f} s{f' {sizing}' if sizing else ''}"
        + f" of {s['wall_seconds']:.1f} s wall; worker time {worker:.1f} s: engine {_share(engine, worker)},"
        f" tokenize {_share(tokenize, worker)}, other {_share(max(worker - engine - tokenize, 0.0), worker)}",
    ]
    if s.get("table"):
        lines.append(f"  table     {table_line(s['table'])}")
    if s.get("padding_efficiency") is not None:
        lines.append(f"  padding   efficiency {s['padding_efficiency']:.3f} ({_n(s['real_tokens'])} real of"
                     f" {_n(s['padded_tokens'])} computed tokens)")
    lines.append(f"  engine    {s['model']} on {s['backend']}, devices {', '.join(s.get('devices') or []) or '–'}"
                 f" ({_n(s.get('engine_loads'))} engine loads, {_n(s.get('batch_retries'))} batch retries)")
    for route in s.get("single_text_tokenizer") or []:
        lines.append(f"  tokenizer single texts: {route}")
    cache, dedup = s.get("cache"), s.get("dedup") or {}
    if cache:
        lines.append(f"  cache     {_n(cache['hits'])} rows from the cache, {_n(cache['misses'])} scored;"
                     f" {_n(cache['texts_encoded'])} {s['scored_unit']} encoded, {_n(cache['tokens_saved'])} tokens saved;"
                     f" {_n(cache['entries_added'])} entries added ({_n(cache['size_entries'])} in"
                     f" {_n(cache['size_batches'])} batches, {cache['size_bytes'] / 1e6:,.1f} MB) -> {cache['path']}")
    elif dedup.get("level") == "run":
        lines.append(f"  distinct  {_n(dedup['units_scored'])} distinct {s['scored_unit']} scored once each for"
                     f" {_n(s['rows_out'])} rows")
    left = s.get("executors_left") or []
    if left:
        lines.append(f"  executors {len(left)} left during the run: " + "; ".join(
            f"{e['id']} on {e['host']} ({'decommissioned' if e['decommissioned'] else 'lost'}"
            f"{': ' + e['reason'] if e['reason'] else ''})" for e in left))
    s3 = s.get("s3") or {}
    boto3, s3a = s3.get("boto3_retries") or {}, s3.get("s3a_driver_jvm") or {}
    if any(boto3.values()) or any(s3a.values()):  # jobs/s3_requests.py says what each counts
        lines.append(f"  s3        boto3 retries: driver {_n(boto3.get('driver'))}, workers {_n(boto3.get('workers'))};"
                     f" s3a (driver JVM): {_n(s3a.get('requests'))} requests, {_n(s3a.get('throttled'))} throttled,"
                     f" {_n(s3a.get('retries'))} retried")
    if s.get("cost"):
        lines += [f"  {line}" for line in describe(s["cost"]).splitlines()]
    return "\n".join(lines)
