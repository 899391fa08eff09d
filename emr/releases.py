"""The EMR release lines this project runs on, what each ships, and everything that differs between them.

One table, one row per release line: EMR 7 (``emr-7.x``: Spark 3.5), EMR 8.0
(``emr-spark-8.0.x``: Spark 4.0) and EMR 8.1 (``emr-spark-8.1.x``: Spark 4.1). A label is
matched to a line by its prefix, so a label of a line with no row (``emr-spark-8.2.0``, with a
Spark minor nobody has tested here) is refused rather than guessed. Cluster requests
(emr/cluster.py), EMR on EKS job runs (emr/eks.py), the environment archive (emr/packaging.py),
preflight (emr/preflight.py) and the docs (tests/test_docs_facts.py) read the release facts
from here and nowhere else.

Every row says where its facts were read and when (``source``, ``read``). ``DEFAULT`` is the
newest long-term-support release: emr-spark-8.1.0 is EMR's first, supported for 36 months;
7.x releases get standard support only.

What does *not* differ, and so has no column: the YARN GPU scheduling configuration
(emr/profiles.py). The EMR release guide's GPU page documents it for 7.x (Amazon Linux 2023
with cgroup v2, hence the cgroup v1 bootstrap); no EMR 8 GPU page was found, and EMR 8 names
Spark's YARN components the same way, so EMR 8 clusters get the EMR 7 configuration
(emr/README.md, "EMR 7 and EMR 8").
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from emr.errors import EmrError

READ = "2026-12-03"  # when every source below was last read
_GUIDE = "https://docs.aws.amazon.com/emr/latest/ReleaseGuide/"
_EKS_GUIDE = "https://docs.aws.amazon.com/emr/latest/EMR-on-EKS-DevelopmentGuide/"


@dataclass(frozen=True)
class ReleaseLine:
    name: str
    family: str  # release labels of this line start with it, on EC2 and on EKS
    default_label: str  # EMR on EC2 (RunJobFlow ReleaseLabel): the line's newest release
    default_eks_label: str  # EMR on EKS (StartJobRun releaseLabel)
    spark: str  # the Spark line, major.minor
    spark_version: str  # what the default label ships
    pythons: tuple[str, ...]  # /usr/bin/pythonX.Y on the nodes that the project can use
    applications: tuple[str, ...]  # RunJobFlow Applications
    # What this line's PySpark asks of the executors' libraries: the Requires-Dist of its
    # `sql` extra, read from the METADATA of the pyspark release named in `pyspark_metadata`.
    # The archive is built under these as pip constraints and preflight checks them.
    executor_libraries: Mapping[str, str]
    pyspark_metadata: str
    released: str  # the default label's initial release date
    source: tuple[str, ...]
    hadoop: str | None = None  # the default label's Hadoop, where the release guide lists one
    eks_dated_label: str | None = None  # what -latest resolved to when read
    lts: bool = False  # long-term support (36 months)
    supported_until: str | None = None  # end of the default label's (standard or LTS) support
    read: str = READ

    @property
    def stage_level_scoring(self) -> bool:
        """Whether the jobs put a ResourceProfile on the scoring stage (``--scoring-resources``, Spark >= 4)."""
        return int(self.spark.split(".")[0]) >= 4

    def constraints(self) -> str:
        """pip constraints (one requirement a line) for the environment archive."""
        return "".join(f"{name}{spec}\n" for name, spec in self.executor_libraries.items())

    @property
    def labels(self) -> tuple[str, ...]:
        """Every label of this line the table names (EC2, EKS, and the dated EKS label)."""
        return tuple(label for label in (self.default_label, self.default_eks_label, self.eks_dated_label) if label)


EMR7 = ReleaseLine(
    "EMR 7", "emr-7.", "emr-7.14.0", "emr-7.14.0-latest", "3.5", "3.5",
    # 7.x ships Python 3.9 and 3.11; 3.9 is below pyproject's requires-python.
    pythons=("3.11",), applications=("Spark", "Hadoop"),
    executor_libraries=MappingProxyType({"pandas": ">=1.0.5", "pyarrow": ">=4.0.0", "numpy": ">=1.15,<2"}),
    pyspark_metadata="pyspark 3.5.9", released="2026-09-08", hadoop="3.4.2-amzn-2",
    supported_until="2028-09-08",
    # The same page's table: emr-7.13.0 ships Hadoop 3.4.2-amzn-0, emr-7.12.0 Hadoop 3.4.1.
    source=(_GUIDE + "emr-7140-release.html",
            _EKS_GUIDE + "emr-eks-spark-connect.html (emr-7.14.0-latest on EMR on EKS)"),
)
EMR8_0 = ReleaseLine(
    "EMR 8.0", "emr-spark-8.0.", "emr-spark-8.0.0", "emr-spark-8.0.0-latest", "4.0", "4.0.2-amzn-0",
    # Its application list names Spark (with Delta, Hudi, Iceberg, Livy, ...) but no Hadoop
    # application, so the request names Spark alone.
    pythons=("3.11", "3.12", "3.13"), applications=("Spark",),
    executor_libraries=MappingProxyType({"pandas": ">=2.0.0", "pyarrow": ">=11.0.0", "numpy": ">=1.21"}),
    pyspark_metadata="pyspark 4.0.5", released="2026-05-21", eks_dated_label="emr-spark-8.0.0-20260421",
    source=(_GUIDE + "emr-spark800-release.html", _EKS_GUIDE + "emr-eks-spark-8.0.0.html"),
)
EMR8_1 = ReleaseLine(
    "EMR 8.1", "emr-spark-8.1.", "emr-spark-8.1.0", "emr-spark-8.1.0-latest", "4.1", "4.1.1-amzn-0",
    pythons=("3.11", "3.13"), applications=("Spark",),
    executor_libraries=MappingProxyType({"pandas": ">=2.2.0", "pyarrow": ">=15.0.0", "numpy": ">=1.21"}),
    pyspark_metadata="pyspark 4.1.4", released="2026-09-08", eks_dated_label="emr-spark-8.1.0-20260812",
    lts=True, supported_until="2029-09-07",
    source=(_GUIDE + "emr-spark810-release.html", _EKS_GUIDE + "emr-eks-spark-8.1.0.html",
            _GUIDE + "emr-standard-support.html"),
)
LINES: tuple[ReleaseLine, ...] = (EMR7, EMR8_0, EMR8_1)
# The newest long-term-support release: what create-cluster, eks-submit and package use without
# --release-label.
DEFAULT = max((line for line in LINES if line.lts), key=lambda line: line.released)
# From this release on, S3A is EMR's connector for every s3:// scheme (EMRFS before).
S3A_SINCE = "emr-7.10.0"
S3A_SOURCE = _GUIDE + "emr-s3a-migrate.html"


def line_of(label: str) -> ReleaseLine | None:
    return next((line for line in LINES if label.startswith(line.family)), None)


def known() -> str:
    return " or ".join(f"{line.family}x ({line.name}, Spark {line.spark})" for line in LINES)


def require_line(label: str) -> ReleaseLine:
    """The line of ``label``; an ``EmrError`` (exit 2) for a label of no line here."""
    line = line_of(label)
    if line is None:
        raise EmrError(f"release label {label!r} is not {known()}: the GPU profiles need Amazon Linux 2023 "
                       f"and a Spark line this project is tested on (EMR 6.x ships Spark 3.0-3.4 on Amazon "
                       f"Linux 2; a newer emr-spark-8 line needs its row in emr/releases.py); "
                       f"default {DEFAULT.default_label}", exit_code=2)
    return line
