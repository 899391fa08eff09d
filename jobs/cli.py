"""The flags every job shares (README.md, "The jobs"), parsed into one frozen config."""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import re

from engines import registry
from jobs import console, stage_resources
from udfs.device import device_forms

FORMATS = ("parquet", "jsonl", "csv")
# A live run renews its lease on the run date every tenth of this (jobs/date_lease.py); a lease not
# renewed for this long is a killed run's. Long enough for a driver stalled by a full GC or a slow
# S3 request, short enough that a retry after a crash waits minutes, not an hour.
LEASE_STALE_SECONDS = 180.0


@dataclasses.dataclass(frozen=True)
class JobConfig:
    input: str
    output: str
    model: str
    run_date: str
    input_format: str
    backend: str
    batch_tokens: int | None  # None: the backend's default (its engine's default_batch_tokens)
    max_seq_len: int | None
    max_invalid_fraction: float
    num_partitions: int | None
    arrow_batch_rows: int
    device: str | None
    master: str | None
    progress_seconds: float
    overlap: bool = False
    cache: str | None = None  # result cache root (jobs/result_cache.py); None: no cache
    dedup: str | None = None  # "run" | "batch"; None: run for bi-encoders and with --cache, else batch
    verbose: bool = False
    instance_type: str | None = None  # None: what EC2 instance metadata says, else no cost
    usd_per_hour: float | None = None  # None: jobs/prices.py's price for the instance type
    instances: int | None = None  # None: distinct executor hosts in the task list
    fallback_model: str | None = None  # scored where a worker's engine refuses --model (jobs/runner.py)
    scoring_resources: str = "auto"  # "auto" | "off": the scoring stage's resource profile (jobs/stage_resources.py)
    take_over_run: bool = False  # delete another run's live lease on the date (jobs/date_lease.py)
    runs_dir: str | None = None  # a table --output's leases, summaries and reports (jobs/tables.py)
    register_table: str | None = None  # <db>.<table> over a Parquet --output (jobs/tables.py)
    lease_stale_seconds: float = LEASE_STALE_SECONDS
    extra: dict = dataclasses.field(default_factory=dict)  # job-specific flags


@dataclasses.dataclass(frozen=True)
class ScoringOptions:
    """How rows are scored, without where they come from or go: what jobs/api.py takes, named as
    JobConfig's fields (and the CLI's flags), so that the runner's checks take either."""

    model: str
    backend: str = "auto"
    batch_tokens: int | None = None
    max_seq_len: int | None = None
    device: str | None = None
    overlap: bool = False
    fallback_model: str | None = None
    dedup: str | None = None
    cache: str | None = None
    scoring_resources: str = "auto"

    def __post_init__(self) -> None:
        for name, allowed in (("backend", backend_choices()), ("dedup", (None, "run", "batch")),
                              ("scoring_resources", stage_resources.CHOICES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in ("batch_tokens", "max_seq_len"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")


# The run date is a partition value, so only its documented spelling is accepted: fromisoformat
# alone also reads 20261129 and week dates (2026-W48-7), while 11/29/2026 is refused.
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _date(text: str) -> str:
    if _ISO_DATE.fullmatch(text):
        try:
            return dt.date.fromisoformat(text).isoformat()
        except ValueError:  # no such day: 2026-02-30
            pass
    raise argparse.ArgumentTypeError(f"must be YYYY-MM-DD, got {text!r}")


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def field_list(text: str) -> tuple[str, ...]:
    """`--fields title,brand` -> ("title", "brand"): the duplicates job's and compile's --fields."""
    fields = tuple(f.strip() for f in text.split(",") if f.strip())
    if not fields:
        raise argparse.ArgumentTypeError("needs at least one field")
    return fields


def format_from_path(path: str) -> str:
    """The default --input-format: from the path's suffix, else parquet (a folder of part files)."""
    name = path.rstrip("/").lower()
    if name.endswith((".jsonl", ".json", ".jsonl.gz", ".json.gz")):
        return "jsonl"
    if name.endswith((".csv", ".csv.gz")):
        return "csv"
    return "parquet"


class OneLineParser(argparse.ArgumentParser):
    """A bad flag is one `error:` line, like every other refusal of the job, not a usage block."""

    def error(self, message: str):
        console.attach()  # under spark-submit, the launcher's stderr
        console.say(f"error: {message} (see {self.prog} --help)")
        raise SystemExit(2)


def backend_choices() -> tuple[str, ...]:
    """`--backend`: every registered engine (engines/registry.py), or auto."""
    return ("auto", *registry.backends())


def batch_tokens_defaults() -> str:
    """'512 for onnx, torch; 8192 for tensorrt, ...': each engine's default_batch_tokens, for --help."""
    by_tokens: dict[int, list[str]] = {}
    for backend in registry.backends():
        by_tokens.setdefault(registry.engine_class(backend).default_batch_tokens, []).append(backend)
    return "; ".join(f"{tokens} for {', '.join(names)}" for tokens, names in by_tokens.items())


def common_parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = OneLineParser(prog=prog, description=description)
    req = p.add_argument_group("Required arguments")
    req.add_argument("--input", required=True, help="input table: a folder or file, local or s3://")
    req.add_argument("--output", required=True,
                     help="output root, rows landing in <output>/run_date=<date>/; or an Iceberg table, "
                          "iceberg:<catalog>.<namespace>.<table> (README.md, \"Output tables\")")
    req.add_argument("--model", required=True, help="artifact folder made by `python -m compiler` (or s3://)")
    opt = p.add_argument_group("Optional arguments")
    opt.add_argument("--fallback-model", default=None,
                     help="artifact (fp32) a worker scores with where its engine refuses --model on its hardware "
                          "(an int8 gate failing on its CPU's instruction set, a plan failing parity on its GPU); "
                          "default: none, those rows are marked error")
    opt.add_argument("--run-date", type=_date, default=dt.datetime.now(dt.timezone.utc).date().isoformat(),
                     help="partition to (re)write, YYYY-MM-DD; default: today (UTC)")
    opt.add_argument("--input-format", choices=FORMATS, default=None, help="default: from the input path's suffix, else parquet")
    opt.add_argument("--backend", choices=backend_choices(), default="auto",
                     help="default: auto (what the artifact and hardware allow)")
    opt.add_argument("--batch-tokens", type=positive_int, default=None,
                     help=f"padded tokens per device batch; default: {batch_tokens_defaults()}")
    opt.add_argument("--max-seq-len", type=positive_int, default=None, help="truncate inputs to this many tokens; default: the artifact's")
    opt.add_argument("--max-invalid-fraction", type=_fraction, default=0.01,
                     help="exit 1 (after writing everything) if more rows than this are invalid or failed; default: 0.01")
    opt.add_argument("--num-partitions", type=positive_int, default=None, help="score in N tasks (the input repartitioned first); default: at least the cores Spark has, "
                          "at most 250,000 rows a task, the input's own partitions where they already hold the "
                          "rows evenly (jobs/partitioning.py)")
    opt.add_argument("--arrow-batch-rows", type=positive_int, default=4096,
                     help="rows per Arrow batch handed to a worker (length sorting happens within it); default: 4096")
    opt.add_argument("--device", default=None, help=f"{device_forms()} when Spark assigns no resource; default: cpu")
    opt.add_argument("--master", default=None, help="Spark master when not launched by spark-submit; default: local[*]")
    opt.add_argument("--progress-seconds", type=float, default=30.0,
                     help="seconds between progress lines when stderr is not a terminal (a terminal gets a "
                          "progress bar); default: 30")
    opt.add_argument("--verbose", action="store_true", help="Spark's INFO log lines on stderr; default: WARN and above")
    opt.add_argument("--overlap", action="store_true",
                     help="tokenize the next Arrow batch in a thread while the engine runs this one; default: off")
    opt.add_argument("--scoring-resources", choices=stage_resources.CHOICES, default="auto",
                     help="auto: on Spark 4 with an accelerator backend, only the scoring stage asks for the "
                          "accelerator (a stage-level resource profile, where Spark allows one); off: every stage "
                          "uses the default profile; default: auto")
    inc = p.add_argument_group("Incremental runs (README.md, \"Incremental runs\")")
    inc.add_argument("--cache", metavar="PATH", default=None,
                     help="result cache, a folder or s3:// (one folder per artifact): score only rows whose "
                          "texts it lacks, then add their results; default: off")
    inc.add_argument("--dedup", choices=("run", "batch"), default=None,
                     help="score identical texts once per run (a Spark distinct and a join back) or once per "
                          "Arrow batch (no shuffle); default: run with --cache and for bi-encoder artifacts (batch where "
                          "all rows are one Arrow batch of one task: the same texts scored, fewer Spark jobs), else batch")
    tables = p.add_argument_group("Output tables (README.md, \"Output tables\")")
    tables.add_argument("--runs-dir", metavar="PATH", default=None,
                        help="with an Iceberg --output: the folder (local or s3://) for each run date's lease, "
                             "summary.json and report.html; required there, refused with a folder --output "
                             "(which keeps them in <output>/_runs)")
    tables.add_argument("--register-table", metavar="DB.TABLE", default=None,
                        help="with a folder --output: create this table of Spark's Hive catalog (on EMR the Glue "
                             "Data Catalog) over the Parquet output once, and add each run's partition to it; "
                             "default: none")
    lease = p.add_argument_group("One run per date (README.md, \"Reliability\")")
    lease.add_argument("--take-over-run", action="store_true",
                       help="write the run date although another run's lease on it is live (only when that run is "
                            "known to be dead); default: exit 2 naming that run")
    lease.add_argument("--lease-stale-seconds", metavar="S", type=positive_float, default=LEASE_STALE_SECONDS,
                       help="after this long without renewal, this run's lease counts as a dead run's and the next "
                            f"run of the date takes it over; default: {LEASE_STALE_SECONDS:g}")
    cost = p.add_argument_group("Cost (the summary's `cost` and the run report)")
    cost.add_argument("--instance-type", metavar="NAME", default=None,
                      help="EC2 instance type of the executors, priced from jobs/prices.py; "
                           "default: from EC2 instance metadata, else no cost")
    cost.add_argument("--usd-per-hour", metavar="USD", type=positive_float, default=None,
                      help="price of one instance-hour; default: us-east-1 on-demand for the instance type")
    cost.add_argument("--instances", metavar="N", type=positive_int, default=None,
                      help="instances billed for the run; default: distinct executor hosts in the task list")
    return p


def config_from(args: argparse.Namespace, extra: dict) -> JobConfig:
    return JobConfig(
        input=args.input, output=args.output.rstrip("/"), model=args.model, run_date=args.run_date,
        input_format=args.input_format or format_from_path(args.input), backend=args.backend,
        batch_tokens=args.batch_tokens, max_seq_len=args.max_seq_len,
        max_invalid_fraction=args.max_invalid_fraction, num_partitions=args.num_partitions,
        arrow_batch_rows=args.arrow_batch_rows, device=args.device, master=args.master,
        progress_seconds=args.progress_seconds, overlap=args.overlap, verbose=args.verbose,
        cache=args.cache.rstrip("/") if args.cache else None, dedup=args.dedup,
        instance_type=args.instance_type, usd_per_hour=args.usd_per_hour, instances=args.instances,
        fallback_model=args.fallback_model, scoring_resources=args.scoring_resources,
        take_over_run=args.take_over_run, lease_stale_seconds=args.lease_stale_seconds,
        runs_dir=args.runs_dir.rstrip("/") if args.runs_dir else None, register_table=args.register_table, extra=extra,
    )
