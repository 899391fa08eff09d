"""The EMR release lines this project runs on, and everything that differs between them.

One table, one row per line: EMR 7 (``emr-7.x``: Spark 3.5) and EMR 8 (``emr-spark-8.x``:
Spark 4.0). Cluster requests (emr/cluster.py), EMR on EKS job runs (emr/eks.py), the
environment archive (emr/packaging.py) and preflight (emr/preflight.py) read their
release-specific facts from here and nowhere else.

What does *not* differ, and so has no column: the YARN GPU scheduling configuration
(emr/profiles.py). The EMR release guide's GPU page documents it for 7.x (YARN of Hadoop 3.4 on
7.8 and later, Amazon Linux 2023 with cgroup v2, hence the cgroup v1 bootstrap); no EMR 8 GPU
page was found, and EMR 8 names Spark's YARN components the same way, so EMR 8 clusters get
the EMR 7 configuration (emr/README.md, "EMR 7 and EMR 8").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from emr.errors import EmrError


@dataclass(frozen=True)
class ReleaseLine:
    name: str
    family: str  # release labels start with it, on EC2 and on EKS
    default_label: str  # EMR on EC2 (RunJobFlow ReleaseLabel)
    default_eks_label: str  # EMR on EKS (StartJobRun releaseLabel)
    spark: str  # the Spark line, major.minor
    pythons: tuple[str, ...]  # /usr/bin/pythonX.Y on the nodes
    applications: tuple[str, ...]  # RunJobFlow Applications
    # What this line's PySpark asks of the executors' libraries (its package metadata); the
    # archive is built under these as pip constraints and preflight checks them.
    executor_libraries: Mapping[str, str] = field(default_factory=dict)

    @property
    def stage_level_scoring(self) -> bool:
        """Whether the jobs put a ResourceProfile on the scoring stage (``--scoring-resources``, Spark >= 4)."""
        return int(self.spark.split(".")[0]) >= 4

    def constraints(self) -> str:
        """pip constraints (one requirement a line) for the environment archive."""
        return "".join(f"{name}{spec}\n" for name, spec in self.executor_libraries.items())


LINES: tuple[ReleaseLine, ...] = (
    # Release guide: 7.x ships Spark 3.5.x with Python 3.9 and 3.11 (3.9 is below pyproject's
    # requires-python); emr-7.14.0 is the newest 7.x, emr-7.13.0-latest the newest on EKS here.
    ReleaseLine(
        "EMR 7", "emr-7.", "emr-7.14.0", "emr-7.13.0-latest", "3.5", ("3.11",),
        ("Spark", "Hadoop"),
        MappingProxyType({"pandas": ">=1.0.5", "pyarrow": ">=4.0.0", "numpy": ">=1.15"})),
    # emr-spark-8.0.0 (May 2026): Spark 4.0.2, Scala 2.13, Python 3.11-3.13; its application
    # list names Spark (with Delta, Hudi, Iceberg, Livy, ...) but no Hadoop application, so
    # the request names Spark alone. On EKS emr-spark-8.0.0-latest (emr-spark-8.0.0-20260421).
    ReleaseLine(
        "EMR 8", "emr-spark-8.", "emr-spark-8.0.0", "emr-spark-8.0.0-latest", "4.0",
        ("3.11", "3.12", "3.13"), ("Spark",),
        MappingProxyType({"pandas": ">=2.0.0", "pyarrow": ">=11.0.0", "numpy": ">=1.21"})),
)
EMR7, EMR8 = LINES
DEFAULT = EMR7


def line_of(label: str) -> ReleaseLine | None:
    return next((line for line in LINES if label.startswith(line.family)), None)


def known() -> str:
    return " or ".join(f"{line.family}x ({line.name}, Spark {line.spark})" for line in LINES)


def require_line(label: str) -> ReleaseLine:
    """The line of ``label``; an ``EmrError`` (exit 2) for a label of no line here."""
    line = line_of(label)
    if line is None:
        raise EmrError(f"release label {label!r} is not {known()}: the GPU profiles need Amazon Linux 2023 "
                       f"and Spark 3.5 or 4.0 (EMR 6.x ships Spark 3.0-3.4 on Amazon Linux 2); "
                       f"default {DEFAULT.default_label}", exit_code=2)
    return line
