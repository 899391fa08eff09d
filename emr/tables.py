"""Output tables on EMR (README.md, "Output tables"): what a step or job run needs so that the job
can write an Iceberg table in the AWS Glue Data Catalog, or register its Parquet output there.

Both go on each spark-submit (EMR on EC2 steps and EMR on EKS job runs alike), so a transient
cluster, an existing one and a virtual cluster need nothing configured beforehand. The cluster's
own Iceberg is used, never a jar of ours. Facts, read 2026-12-04:
- the runtime jar's path on EMR on EC2 (6.5.0 and later) and in EMR on EKS images, and the Glue
  catalog settings: "Use an Iceberg cluster with Spark" (EMR Release Guide,
  https://docs.aws.amazon.com/emr/latest/ReleaseGuide/emr-iceberg-use-spark-cluster.html) and "Using
  Apache Iceberg with Amazon EMR on EKS"
  (https://docs.aws.amazon.com/emr/latest/EMR-on-EKS-DevelopmentGuide/tutorial-iceberg.html);
- the Glue Data Catalog as Spark's Hive metastore: "Use the AWS Glue Data Catalog as the metastore
  for Spark SQL" (https://docs.aws.amazon.com/emr/latest/ReleaseGuide/emr-spark-glue.html).
The IAM permissions these need are in emr/iam/glue-tables-policy.json (the EC2 instance profile's
role) and emr/k8s/iam/job-execution-policy.json (the EKS job execution role).
"""
from __future__ import annotations

ICEBERG = "iceberg:"
RUNTIME_JAR = "/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar"
GLUE_HIVE_CLIENT = "com.amazonaws.glue.catalog.metastore.AWSGlueDataCatalogHiveClientFactory"


def iceberg_catalog(output: str) -> str | None:
    """The catalog an `iceberg:<catalog>.<namespace>.<table>` output names; None for a folder."""
    return output[len(ICEBERG):].split(".")[0] if output.startswith(ICEBERG) else None


def glue_iceberg_conf(catalog: str, warehouse: str) -> dict[str, str]:
    """Spark settings for an Iceberg catalog `catalog` backed by the Glue Data Catalog, its data
    and metadata under `warehouse` (s3://...), written through Iceberg's S3FileIO."""
    prefix = f"spark.sql.catalog.{catalog}"
    return {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.catalog-impl": "org.apache.iceberg.aws.glue.GlueCatalog",
        f"{prefix}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        f"{prefix}.warehouse": warehouse,
    }


def glue_hive_conf() -> dict[str, str]:
    """Spark settings for --register-table: Spark's Hive catalog on the Glue Data Catalog."""
    return {"spark.sql.catalogImplementation": "hive",
            "spark.hadoop.hive.metastore.client.factory.class": GLUE_HIVE_CLIENT}
