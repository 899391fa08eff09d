"""AWS on this machine, for the tests and the benches: a moto server (moto_server.py) and the
s3a jars a local Spark needs to reach it or S3 itself (s3a_jars.py). Nothing here ships with the
jobs: pyproject.toml leaves this package out of the wheel."""
