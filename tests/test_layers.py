"""The layers hold: a package imports only the packages below it, and no import statement closes
a circle of modules, not even one inside a function (a circle that survives only that way is one
responsibility in the wrong place).

    tests/  ->  emr/, bench/, compiler/  ->  jobs/ (driver)  ->  udfs/ (executor Python)  ->  engines/
                bench/ -> local_aws/ (moto and the s3a jars, shared with tests/)

Every import counts, those inside functions too: an executor that runs a function of engines/ must
not need jobs/. Read from the source with `ast`, nothing imported.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What each package may import of the project's own packages (besides itself).
ALLOWED = {
    "engines": set(),
    "udfs": {"engines"},
    "jobs": {"udfs", "engines"},
    "compiler": {"jobs", "udfs", "engines"},  # --parity-data reads a job's input as the job does
    "emr": {"jobs", "udfs", "engines"},
    "local_aws": {"engines"},  # AWS on 127.0.0.1 for the tests and the benches
    "bench": {"compiler", "jobs", "udfs", "engines", "local_aws"},
    "tests": {"compiler", "emr", "bench", "jobs", "udfs", "engines", "local_aws"},  # nothing imports tests/
}


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the layered packages under `root`."""
    found = {}
    for package in ALLOWED:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, name: str) -> list[tuple[int, str]]:
    """(line, module) of each project import in `path`; `from a import b` names a.b when that is a
    module of its own, as `from engines import artifact` does."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against this module's package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
            found.append((node.lineno, base))
    return [(line, m) for line, m in found if m.split(".")[0] in ALLOWED]


def upward_imports(root: Path) -> list[str]:
    """Each import of a package its layer may not use, as 'file:line imports module'."""
    bad = {}
    for name, path in modules(root).items():
        layer = name.split(".")[0]
        for line, module in imports(path, name):
            target = module.split(".")[0]
            if target != layer and target not in ALLOWED[layer]:
                where = (f"{path.relative_to(root)}:{line}", layer, target)  # `from a import b`: a, not a.b too
                bad[where] = min(bad.get(where, module), module, key=len)
    return sorted(f"{where} imports {module} ({layer}/ may not import {target}/)"
                  for (where, layer, target), module in bad.items())


def import_circles(root: Path) -> list[list[str]]:
    """The strongly connected groups of two or more modules in the graph of their imports."""
    known = modules(root)
    graph = {name: sorted({m for _, m in imports(path, name) if m in known and m != name})
             for name, path in known.items()}
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return circles


def test_no_package_imports_a_layer_above_it():
    assert upward_imports(ROOT) == []


def test_no_modules_import_each_other():
    assert import_circles(ROOT) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for package in ALLOWED:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_a_planted_upward_import_fails_even_inside_a_function(tmp_path):
    root = _tree(tmp_path, {"engines/base.py": "def f():\n    from jobs import cli\n",
                            "udfs/ok.py": "from engines import base\n",
                            "jobs/cli.py": "from . import spark_io\n", "jobs/spark_io.py": "import udfs.ok\n"})
    assert upward_imports(root) == ["engines/base.py:2 imports jobs (engines/ may not import jobs/)"]


def test_a_planted_circle_fails_through_a_function_too(tmp_path):
    root = _tree(tmp_path, {"engines/a.py": "from engines import b\n", "engines/b.py": "import engines.a\n",
                            "engines/c.py": "from engines.d import x\n", "engines/d.py": "def f():\n    import engines.c\n",
                            "engines/e.py": "from engines import a\n"})
    assert sorted(import_circles(root)) == [["engines.a", "engines.b"], ["engines.c", "engines.d"]]
