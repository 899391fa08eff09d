"""Byte code beside each source in a Spark home's pyspark.zip, so Python workers do not compile
pyspark from source at every start.

Spark puts `$SPARK_HOME/python/lib/pyspark.zip` first on the path of every Python process it
starts (its PythonUtils.sparkPythonPath), and Python cannot cache byte code inside a zip: each
worker daemon, on every executor of every run, compiles the pyspark modules it imports again
(docs/performance.md, "A cold run's fixed cost"). zipimport reads a `module.pyc` beside
`module.py` when its magic number is the running Python's, and falls back to the source when
it is not (another Python's `PYSPARK_PYTHON`, a packed environment), so the zip stays valid for
every Python. The byte code is unchecked-hash, as pip writes none into the zip: this script
writes source and byte code together, and pip replaces the zip whole.

`make spark-conf` runs it with the venv's Python on the venv's own zip; usage:
    python jobs/conf/pyspark_zip_bytecode.py SPARK_HOME/python/lib/pyspark.zip
"""
from __future__ import annotations

import compileall
import os
import py_compile
import sys
import tempfile
import zipfile
from pathlib import Path


def add_bytecode(archive: Path) -> int:
    """Adds a .pyc beside each .py of `archive` that has none; the number added. The sources and
    every other entry are copied byte for byte, and the zip is replaced in one rename."""
    with zipfile.ZipFile(archive) as src:
        entries = src.infolist()
        present = {e.filename for e in entries}
        sources = [e for e in entries if e.filename.endswith(".py") and e.filename + "c" not in present]
        if not sources:
            return 0
        partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
        try:
            with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(partial, "w") as dst:
                src.extractall(tmp, members=sources)  # only those: a .pyc under tmp is one compiled here
                # ddir: tracebacks name the file inside the zip, as zipimport's own compile does.
                compileall.compile_dir(tmp, ddir=str(archive), legacy=True, quiet=2, workers=1,
                                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
                added = 0
                for entry in entries:
                    dst.writestr(entry, src.read(entry))
                    pyc = Path(tmp, entry.filename + "c")
                    if pyc.is_file():  # absent: not a source taken here, or one that does not compile
                        dst.writestr(zipfile.ZipInfo(entry.filename + "c", entry.date_time),
                                     pyc.read_bytes(), compress_type=entry.compress_type)
                        added += 1
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    os.replace(partial, archive)
    return added


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.rsplit("usage:", 1)[1].strip(), file=sys.stderr)
        return 2
    archive = Path(argv[0])
    if not archive.is_file():  # a Spark home without it: its workers import an installed pyspark
        print(f"{archive}: no such file; nothing to add byte code to")
        return 0
    added = add_bytecode(archive)
    print(f"{archive}: byte code for {added} modules added" if added else f"{archive}: byte code already present")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
