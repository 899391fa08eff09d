"""Small-file operations through Hadoop's FileSystem, so a local folder, s3:// (EMRFS) and s3a://
behave alike: the job's summaries and the result cache's markers, leases and listings."""
from __future__ import annotations

from pyspark.sql import SparkSession


def _fs(spark: SparkSession, path: str):
    jvm = spark.sparkContext._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hpath


def write_text(spark: SparkSession, path: str, text: str) -> None:
    """One small file, overwritten if present."""
    fs, hpath = _fs(spark, path)
    stream = fs.create(hpath, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


def publish_text(spark: SparkSession, path: str, text: str) -> None:
    """Write a file that readers see whole or not at all: a hidden temporary next to it, then a
    rename (atomic on a local disk and HDFS; on S3 the renamed object appears in one piece)."""
    fs, hpath = _fs(spark, path)
    tmp = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(hpath.getParent(), f".tmp-{hpath.getName()}")
    write_text(spark, tmp.toString(), text)
    if not fs.rename(tmp, hpath):
        fs.delete(tmp, False)
        raise OSError(f"could not publish {path}")


def read_text(spark: SparkSession, path: str) -> str:
    fs, hpath = _fs(spark, path)
    stream = fs.open(hpath)
    try:
        jvm = spark.sparkContext._jvm
        return jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()


def _visible(spark: SparkSession, folder: str) -> list:
    """The FileStatus of each entry directly under `folder`, skipping hidden ones ('.' and '_'
    prefixes, as Spark does); [] when the folder does not exist."""
    fs, hpath = _fs(spark, folder)
    if not fs.exists(hpath):
        return []
    return [status for status in fs.listStatus(hpath) if not status.getPath().getName().startswith((".", "_"))]


def list_names(spark: SparkSession, folder: str) -> list[str]:
    """Names of the files and folders directly under `folder` (`_visible`), sorted."""
    return sorted(status.getPath().getName() for status in _visible(spark, folder))


def modified(spark: SparkSession, folder: str) -> dict[str, float]:
    """Name -> last modification (seconds since the epoch, as the FileSystem keeps it: S3's
    LastModified, a local file's mtime) of each file directly under `folder` (`_visible`)."""
    return {status.getPath().getName(): status.getModificationTime() / 1000
            for status in _visible(spark, folder) if status.isFile()}


def exists(spark: SparkSession, path: str) -> bool:
    fs, hpath = _fs(spark, path)
    return bool(fs.exists(hpath))


def delete(spark: SparkSession, path: str) -> None:
    """Delete a file or a folder and everything under it; nothing if absent."""
    fs, hpath = _fs(spark, path)
    fs.delete(hpath, True)


def make_folder(spark: SparkSession, folder: str) -> None:
    """Create `folder` (and its parents) where absent."""
    fs, hpath = _fs(spark, folder)
    fs.mkdirs(hpath)


def delete_if_empty(spark: SparkSession, folder: str) -> bool:
    """Delete `folder` only if nothing is in it; whether it is gone. Safe against another process
    writing into it: the FileSystem refuses to delete a folder that is not empty."""
    fs, hpath = _fs(spark, folder)
    try:
        return bool(fs.delete(hpath, False))
    except Exception:  # noqa: BLE001 - not empty (an IOException on local disks, HDFS and s3a)
        return False


def size_bytes(spark: SparkSession, path: str) -> int:
    fs, hpath = _fs(spark, path)
    return int(fs.getContentSummary(hpath).getLength()) if fs.exists(hpath) else 0
