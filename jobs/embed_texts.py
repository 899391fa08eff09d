"""Embed texts: each text's vector from an embedding artifact, for a vector index or a search.

    spark-submit jobs/embed_texts.py --input catalogue.parquet --output out/ --model artifacts/minilm \
        --run-date 2026-11-29

Input: `id` and `text` (names settable). Output: id, embedding (array<float>), dim, model,
status, error, truncated; partition run_date. Each distinct text is embedded once per run
(--dedup run, the default), and with --cache once until the model changes.
"""
from __future__ import annotations

import argparse
import os
import sys

if __package__ in (None, ""):  # run as a file by spark-submit or python: make the repo importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jobs.entry import needs_project  # noqa: E402 (standard library only)

with needs_project("jobs/embed_texts.py"):
    from jobs import runner
    from jobs.cli import common_parser, config_from
    from udfs.workloads import EmbedTexts


def build_parser() -> argparse.ArgumentParser:
    parser = common_parser("embed_texts.py", __doc__.split("\n\n")[0])
    parser.add_argument("--id-column", default="id", help="default: id")
    parser.add_argument("--text-column", default="text", help="default: text")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    workload = EmbedTexts(id_column=args.id_column, text_column=args.text_column)
    return runner.run(config_from(args, {}), workload, "accel-scoring-embed-texts")


if __name__ == "__main__":
    sys.exit(main())
