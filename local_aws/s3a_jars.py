"""Spark's s3a filesystem for the tests: hadoop-aws and the AWS SDK bundle it was built against.

pyspark's pip package ships Hadoop's client (3.3.4) without hadoop-aws. The one registry copy
of a hadoop-aws 3.3.x jar reachable here is inside the `sagemaker-pyspark` source archive on
PyPI (`deps/jars/`): hadoop-aws 3.3.1 and aws-java-sdk-bundle 1.11.901, the pair Hadoop 3.3.1
was released with, on the same 3.3 line as Spark 3.5's Hadoop client. `fetch()` downloads that
archive once with pip, extracts only the two jars, checks them against the sha256 values pinned
here and keeps them under ~/.cache/accel-scoring/s3a-jars/ (never in the checkout).

`make s3a-jars` (a prerequisite of `make test`) runs `python -m local_aws.s3a_jars`, which prints
the jars' paths as a `--jars` value.

hadoop-aws works only with the Hadoop client of its own release line. Spark 4.0 bundles Hadoop
3.4, whose hadoop-aws is built on the AWS SDK v2 bundle, and no registry package reachable here
ships that pair; so on Spark 4 the tests leave these jars off the classpath and tests/test_s3.py
skips, saying so (`unusable_reason`).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from engines.artifact import sha256_file

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
    """Outside the checkout, so a fresh clone of the same machine reuses it; the README's
    `--jars` line names this folder."""
    return Path.home() / ".cache" / "accel-scoring" / "s3a-jars"


def cached(root: Path | None = None) -> list[Path] | None:
    """The jars when fetch() has put them in place (it checks them before it does), else None."""
    folder = Path(root or cache_dir())
    paths = [folder / name for name in JARS]
    return paths if all(p.is_file() for p in paths) else None


def fetch(root: Path | None = None) -> list[Path]:
    """The two jars, downloaded and checked on first use. The folder is filled in a temporary
    sibling and renamed into place only when both jars match their sha256, so a folder that
    exists holds checked jars."""
    folder = Path(root or cache_dir())
    found = cached(folder)
    if found:
        return found
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".s3a-jars-", dir=folder.parent) as tmp:
        download = Path(tmp) / "download"
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                               "--disable-pip-version-check", "-d", str(download), SDIST],
                              capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"pip could not download {SDIST}:\n{proc.stdout}{proc.stderr}")
        (archive,) = download.glob("*.tar.gz")
        staged = Path(tmp) / "jars"
        staged.mkdir()
        with tarfile.open(archive) as tar:
            for name, expected in JARS.items():
                source = tar.extractfile(MEMBER_DIR + name)
                with open(staged / name, "wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
                actual = sha256_file(staged / name)
                if actual != expected:
                    raise RuntimeError(f"{name} from {SDIST} has sha256 {actual}; local_aws/s3a_jars.py pins {expected}")
        try:
            os.rename(staged, folder)
        except OSError:  # another run put them in place first
            pass
    return cached(folder)


def jars_option(paths: list[Path]) -> str:
    """The value of spark-submit's --jars (and of spark.jars)."""
    return ",".join(str(p) for p in paths)


if __name__ == "__main__":
    print(jars_option(fetch()))
