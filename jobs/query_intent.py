"""Classify search queries: an intent, its confidence and the top-k alternatives per query.

    spark-submit jobs/query_intent.py --input queries.parquet --output out/ --model artifacts/intent \
        --run-date 2026-11-29 --top-k 3

Input: `query_id`, `query` (names settable). Output: query_id, intent, confidence, top_k
(array<struct<label, score>>), model, status, error, truncated; partition run_date.
--top-k larger than the artifact's label count is clamped to that count.
"""
from __future__ import annotations

import argparse
import os
import sys

if __package__ in (None, ""):  # run as a file by spark-submit or python: make the repo importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jobs.entry import needs_project  # noqa: E402 (standard library only)

with needs_project("jobs/query_intent.py"):
    from jobs import runner
    from jobs.cli import common_parser, config_from, positive_int
    from udfs.workloads import QueryIntent


def build_parser() -> argparse.ArgumentParser:
    parser = common_parser("query_intent.py", __doc__.split("\n\n")[0])
    parser.add_argument("--top-k", type=positive_int, default=3, help="alternatives per query (clamped to the label count); default: 3")
    parser.add_argument("--id-column", default="query_id", help="default: query_id")
    parser.add_argument("--query-column", default="query", help="default: query")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    workload = QueryIntent(id_column=args.id_column, query_column=args.query_column, top_k=args.top_k)
    cfg = config_from(args, {"top_k": args.top_k})
    return runner.run(cfg, workload, "accel-scoring-query-intent")


if __name__ == "__main__":
    sys.exit(main())
