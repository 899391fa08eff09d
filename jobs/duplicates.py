"""Score candidate product pairs: the probability that two offers are the same product.

    spark-submit jobs/duplicates.py --input pairs.parquet --output out/ --model artifacts/minilm \
        --run-date 2026-11-29

Input: `pair_id` and, per side, `left_<field>` / `right_<field>` for each --fields entry.
Output: pair_id, score, is_duplicate, model, status, error, truncated; partition run_date.
"""
from __future__ import annotations

import argparse
import os
import sys

if __package__ in (None, ""):  # run as a file by spark-submit or python: make the repo importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jobs.entry import needs_project  # noqa: E402 (standard library only)

with needs_project("jobs/duplicates.py"):
    from jobs import runner
    from jobs.cli import common_parser, config_from, field_list
    from udfs.workloads import Duplicates


def build_parser() -> argparse.ArgumentParser:
    parser = common_parser("duplicates.py", __doc__.split("\n\n")[0])
    parser.add_argument("--fields", type=field_list, default=",".join(Duplicates.fields),
                        help="per-side fields joined in order into a side's text; the first is required; "
                             "default: title,brand,description")
    parser.add_argument("--id-column", default="pair_id", help="default: pair_id")
    parser.add_argument("--threshold", type=float, default=None, help="is_duplicate = score >= this; default: the artifact's")
    parser.add_argument("--strict-fields", action="store_true",
                        help="every field's columns are required (exit 2 if one is absent); default: only the first's")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    fields = args.fields
    workload = Duplicates(fields=fields, id_column=args.id_column, threshold=args.threshold,
                          strict_fields=args.strict_fields)
    cfg = config_from(args, {"fields": fields, "threshold": args.threshold, "strict_fields": args.strict_fields})
    return runner.run(cfg, workload, "accel-scoring-duplicates")


if __name__ == "__main__":
    sys.exit(main())
