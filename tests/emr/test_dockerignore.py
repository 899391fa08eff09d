"""The images under emr/ build from the repository root: .dockerignore must keep exactly what
their Dockerfiles COPY, so the context is a wheel, a script and two pin lists, not the venvs and artifacts."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _copy_sources() -> set[str]:
    sources = set()
    for dockerfile in sorted((REPO / "emr").rglob("Dockerfile*")):
        for line in dockerfile.read_text().splitlines():
            words = line.split()
            if words[:1] == ["COPY"]:
                sources.update(w for w in words[1:-1] if not w.startswith("--"))
    return sources


def test_dockerignore_keeps_only_what_the_dockerfiles_copy() -> None:
    rules = [l.strip() for l in (REPO / ".dockerignore").read_text().splitlines()
             if l.strip() and not l.startswith("#")]
    assert rules[0] == "*"  # everything else stays out
    kept = {rule[1:] for rule in rules[1:] if rule.startswith("!")}
    assert kept == _copy_sources() == {"dist/accel_scoring-*.whl", "emr/scripts/get_neuroncores.py",
                                             "dist/gpu-requirements.txt", "dist/gpu-torch-requirements.txt",
                                             "dist/accel-scoring-constraints.txt"}
