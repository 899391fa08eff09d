"""A tiny job for the packaging test: which Python do executors run, and can they import us?

spark-submit --archives env.tar.gz#environment --py-files accel_scoring.zip probe_job.py OUT
"""

import json
import sys

from pyspark.sql import SparkSession


def probe(_rows):
    import os

    import onnxruntime  # from the environment archive, not from the test's venv
    import engines.store  # from the --py-files zip

    yield json.dumps({
        "executable": sys.executable,
        "cwd": os.getcwd(),
        "onnxruntime": onnxruntime.__file__,
        "store": engines.store.__file__,
    })


def main() -> None:
    spark = SparkSession.builder.appName("accel-scoring-packaging-probe").getOrCreate()
    rows = spark.sparkContext.parallelize(range(4), 2).mapPartitions(probe).collect()
    with open(sys.argv[1], "w") as out:
        out.write("\n".join(rows) + "\n")
    spark.stop()


if __name__ == "__main__":
    main()
