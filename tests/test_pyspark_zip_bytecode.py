"""jobs/conf/pyspark_zip_bytecode.py, which `make spark-conf` runs on the venv's pyspark.zip: Python
workers run the byte code it adds, another Python falls back to the sources, and nothing else in
the zip changes."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "jobs" / "conf" / "pyspark_zip_bytecode.py"
ENTRIES = {"pkg/__init__.py": b"", "pkg/mod.py": b"X = 1\n\ndef where():\n    raise RuntimeError('here')\n",
           "pkg/bad.py": b"def (:\n", "pkg/data.txt": b"not code"}


def add_bytecode(archive: Path) -> str:
    return subprocess.run([sys.executable, str(SCRIPT), str(archive)], capture_output=True, text=True,
                          check=True).stdout


def rewritten(archive: Path, name: str, data: bytes) -> None:
    """`archive` with one entry's bytes replaced, every other entry kept."""
    with zipfile.ZipFile(archive) as z:
        kept = {i.filename: z.read(i) for i in z.infolist()}
    kept[name] = data
    with zipfile.ZipFile(archive, "w") as z:
        for n, d in kept.items():
            z.writestr(n, d)


def run_from(archive: Path, code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(archive)}).stdout.strip()


@pytest.fixture()
def archive(tmp_path: Path) -> Path:
    path = tmp_path / "pyspark.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in ENTRIES.items():
            z.writestr(name, data)
    return path


def test_adds_byte_code_once_and_keeps_every_entry(archive):
    assert "byte code for 2 modules added" in add_bytecode(archive)  # bad.py does not compile: left as it is
    with zipfile.ZipFile(archive) as z:
        assert {n: z.read(n) for n in ENTRIES} == ENTRIES
        assert sorted(set(z.namelist()) - set(ENTRIES)) == ["pkg/__init__.pyc", "pkg/mod.pyc"]
        assert z.read("pkg/mod.pyc")[:4] == importlib.util.MAGIC_NUMBER
    before = archive.read_bytes()
    assert "already present" in add_bytecode(archive)
    assert archive.read_bytes() == before


def test_a_spark_home_without_the_zip_is_left_as_it_is(tmp_path):
    assert "no such file" in add_bytecode(tmp_path / "pyspark.zip")
    assert list(tmp_path.iterdir()) == []


def test_workers_run_the_byte_code_and_tracebacks_name_the_zip(archive):
    add_bytecode(archive)
    rewritten(archive, "pkg/mod.py", b"X = 2\n")  # the source changed, the byte code did not: which ran?
    assert run_from(archive, "import pkg.mod; print(pkg.mod.X)") == "1"
    assert run_from(archive, "import pkg.mod; print(pkg.mod.where.__code__.co_filename)") == f"{archive}/pkg/mod.py"


def test_another_python_falls_back_to_the_sources(archive):
    add_bytecode(archive)
    with zipfile.ZipFile(archive) as z:
        pyc = z.read("pkg/mod.pyc")
    rewritten(archive, "pkg/mod.py", b"X = 2\n")
    rewritten(archive, "pkg/mod.pyc", b"\x00\x00\r\n" + pyc[4:])  # another interpreter's magic number
    assert run_from(archive, "import pkg.mod; print(pkg.mod.X)") == "2"


def test_this_venvs_spark_ships_byte_code_its_python_reads():
    import pyspark

    zip_path = Path(pyspark.__file__).parent / "python" / "lib" / "pyspark.zip"
    if not Path(pyspark.__file__).is_relative_to(Path(sys.prefix)) or not zip_path.exists():
        pytest.skip("pyspark is not this venv's own (make spark-conf writes the byte code there)")
    with zipfile.ZipFile(zip_path) as z:
        assert z.read("pyspark/worker.pyc")[:4] == importlib.util.MAGIC_NUMBER
