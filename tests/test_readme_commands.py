"""The docs' local commands run as written, in a shell that activated nothing.

A fenced block right after the line `<!-- clean-shell -->` in README.md, docs/*.md or
emr/README.md is a list of commands a user runs on their own machine. Each runs here from the
repository root with only HOME and a plain PATH, on small inputs: the documented placeholders
(`/path/to/hf-folder`, `pairs.parquet`, …) stand for tiny models and data made by the test, and
whatever the commands write under `artifacts/`, `data/` or `out/` lands in a temporary folder instead.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", REPO / "emr" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MARKER = "<!-- clean-shell -->"
CLEAN_ENV = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/local/bin:/usr/bin:/bin"}
WRITES_UNDER = ("artifacts/", "data/", "out/")

pytestmark = pytest.mark.slow


def marked_blocks(path: Path) -> list[list[str]]:
    """The commands of each marked block: comments dropped, `\\` continuations joined."""
    blocks = []
    for match in re.finditer(re.escape(MARKER) + r"\s*\n[ \t]*```[^\n]*\n(.*?)\n[ \t]*```", path.read_text(), re.S):
        joined = re.sub(r"\\\n\s*", " ", match.group(1))
        commands = [re.sub(r"\s+#.*$", "", line).strip() for line in joined.splitlines()]
        blocks.append([c for c in commands if c and not c.startswith("#")])
    return blocks


def test_the_docs_mark_their_local_commands():
    blocks = {path.relative_to(REPO): marked_blocks(path) for path in DOCS}
    assert blocks[Path("README.md")], "README.md marks no block of local commands"
    for path, found in blocks.items():
        assert all(found), f"{path} has an empty marked block"


@pytest.fixture(scope="module")
def placeholders(tmp_path_factory, tiny_models) -> dict[str, str]:
    from tests.jobhelpers import pairs_frame

    data = tmp_path_factory.mktemp("user-data")
    pairs_frame(200).to_parquet(data / "pairs.parquet")
    return {
        "/path/to/hf-folder": str(tiny_models["pair-classification"]),
        "/path/to/encoder": str(tiny_models["embedding"]),
        "/path/to/classifier": str(tiny_models["text-classification"]),
        "examples.csv": str(REPO / "bench" / "data" / "intent_examples.csv"),
        "pairs.parquet": str(data / "pairs.parquet"),
    }


def localized(command: str, placeholders: dict[str, str], scratch: Path) -> list[str]:
    args = []
    for token in shlex.split(command):
        if token in placeholders:
            token = placeholders[token]
        elif token.startswith(WRITES_UNDER):
            token = str(scratch / token)
        args.append(token)
    return args


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_marked_commands_run_as_written_in_a_clean_shell(doc, placeholders, tmp_path):
    for block in marked_blocks(doc):
        for command in block:  # in order: later commands use what earlier ones wrote
            args = localized(command, placeholders, tmp_path)
            proc = subprocess.run(args, cwd=REPO, env=CLEAN_ENV, capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, f"{doc.name}: `{command}` exited {proc.returncode}:\n{proc.stderr[-3000:]}"
            assert "Traceback" not in proc.stderr, f"{doc.name}: `{command}`:\n{proc.stderr[-3000:]}"
