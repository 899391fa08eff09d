"""What a run's S3 requests cost in retries, for the summary: S3 throttles (503 SlowDown), fails
(500) and drops connections under load, and the clients retry; a run whose retries climb is
near its prefixes' request limits before it fails.

Two clients talk to S3:
- boto3 reads `--model s3://` on the driver and on every worker (engines/store.py); botocore's
  count of requests it sent again is exact, and each worker reports its own in its task record.
- Spark's s3a filesystem reads the input, writes the output, the cache, the leases and the
  summary. Its counters live in each JVM (`S3AStorageStatistics`); the driver reads its own,
  which on `local[N]` masters include the executors' and on a cluster do not. Hadoop 3.3's s3a
  counts every HTTP request, retries included, and the 503s it saw, but not the AWS SDK's own
  retries of a 500 or a dropped connection: `requests` is where those show.
"""
from __future__ import annotations

from dataclasses import dataclass

from engines.store import s3_retries

_S3A = "S3AStorageStatistics"
_S3A_COUNTERS = {"store_io_request": "requests", "store_io_throttled": "throttled", "store_io_retry": "retries"}


def s3a_counters(spark) -> dict[str, int]:
    """This JVM's s3a counters, summed over its filesystems; zeros where s3a never loaded."""
    found = dict.fromkeys(_S3A_COUNTERS.values(), 0)
    stats = spark.sparkContext._jvm.org.apache.hadoop.fs.FileSystem.getGlobalStorageStatistics().get(_S3A)
    if stats is not None:
        for name, key in _S3A_COUNTERS.items():
            found[key] += int(stats.getLong(name) or 0)
    return found


@dataclass(frozen=True)
class S3Requests:
    """The counters when a run started; `summary` is what the run itself added."""

    boto3_retries: int
    s3a: dict[str, int]

    @classmethod
    def since(cls, boto3_retries: int, spark) -> "S3Requests":
        """boto3's count from before the driver read the manifest; s3a's from now, as Spark starts."""
        return cls(boto3_retries, s3a_counters(spark))

    def summary(self, spark, tasks: list[dict]) -> dict:
        s3a = s3a_counters(spark)
        return {
            "boto3_retries": {"driver": s3_retries() - self.boto3_retries,
                              "workers": sum(int(t.get("s3_retries") or 0) for t in tasks)},
            "s3a_driver_jvm": {key: s3a[key] - self.s3a[key] for key in s3a},
        }
