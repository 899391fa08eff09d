"""Spark's s3a filesystem for the tests: hadoop-aws and the AWS SDK bundle it was built against.

pyspark's pip package ships Hadoop's client (3.3.4) without hadoop-aws. The one registry copy
of a hadoop-aws 3.3.x jar reachable here is inside the `sagemaker-pyspark` source archive on
PyPI (`deps/jars/`): hadoop-aws 3.3.1 and aws-java-sdk-bundle 1.11.901, the pair Hadoop 3.3.1
was released with, on the same 3.3 line as Spark 3.5's Hadoop client. `fetch()` downloads that
archive once with pip, extracts only the two jars, checks them against the sha256 values pinned
here and keeps them under ~/.cache/accel-scoring/s3a-jars/ (never in the checkout): local_aws/pinned_jars.py.

`make s3a-jars` (a prerequisite of `make test`) runs `python -m local_aws.s3a_jars`, which prints
the jars' paths as a `--jars` value.

hadoop-aws works only with the Hadoop client of its own release line. Spark 4.0 bundles Hadoop
3.4, whose hadoop-aws is built on the AWS SDK v2 bundle, and no registry package reachable here
ships that pair; so on Spark 4 the tests leave these jars off the classpath and tests/test_s3.py
skips, saying so (`unusable_reason`).
"""
from __future__ import annotations

from pathlib import Path

from local_aws import pinned_jars

SDIST = "sagemaker-pyspark==1.4.5"
MEMBER_DIR = "sagemaker_pyspark-1.4.5/deps/jars/"
JARS = {  # file name -> sha256
    "hadoop-aws-3.3.1.jar": "6be50ad8a8b445d2802381b085b2a3ede5c29d353450a6a21f16b2fefa962b6e",
    "aws-java-sdk-bundle-1.11.901.jar": "b87175b32a16544cc1b37cf40390eb375833e62bed67f8ce6cde4b7ad6429ead",
}
HADOOP_LINE = "3.3"  # the Hadoop release line hadoop-aws 3.3.1 belongs to


def spark_hadoop_version(spark_home: Path | None = None) -> str | None:
    """The version of the Hadoop client the installed pyspark bundles (`jars/hadoop-client-api-X.jar`)."""
    if spark_home is None:
        import pyspark

        spark_home = Path(pyspark.__file__).parent
    found = sorted(Path(spark_home, "jars").glob("hadoop-client-api-*.jar"))
    return found[0].name[len("hadoop-client-api-"):-len(".jar")] if found else None


def unusable_reason(spark_home: Path | None = None) -> str | None:
    """Why these jars cannot give this pyspark an s3a filesystem, or None when they can."""
    version = spark_hadoop_version(spark_home)
    if version is None or version.split(".")[:2] == HADOOP_LINE.split("."):
        return None
    return (f"this pyspark bundles Hadoop {version}; the s3a jars ({', '.join(JARS)}) are for Hadoop "
            f"{HADOOP_LINE}, and hadoop-aws must match Spark's Hadoop line (local_aws/s3a_jars.py)")


def for_this_spark() -> list[Path] | None:
    """The cached jars when they suit the installed pyspark's Hadoop client, else None."""
    return None if unusable_reason() else cached()


def cache_dir() -> Path:
    """Outside the checkout; the README's `--jars` line names this folder."""
    return pinned_jars.cache_root() / "s3a-jars"


def cached(root: Path | None = None) -> list[Path] | None:
    """The jars when fetch() has put them in place (it checks them before it does), else None."""
    return pinned_jars.cached(Path(root or cache_dir()), JARS)


def fetch(root: Path | None = None) -> list[Path]:
    """The two jars, downloaded from the source archive and checked on first use (local_aws/pinned_jars.py)."""
    return pinned_jars.fetch(Path(root or cache_dir()), SDIST, MEMBER_DIR, JARS, pins="local_aws/s3a_jars.py",
                             sdist=True)


jars_option = pinned_jars.jars_option


if __name__ == "__main__":
    print(jars_option(fetch()))
