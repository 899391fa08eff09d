"""Every documented command and flag does what the docs say (issue #19).

Flag tables. Each CLI's flags, as its argparse parser has them, are exactly the rows of the
tables its doc sections hold (README.md "CLI reference"; emr/README.md "CLI reference" for
`python -m emr`). A table is the first one under its heading and reads `| flag | default |
meaning |`:
- flag: one code span, the flag alone for a switch (`--overlap`), else the flag and a
  placeholder (`--max-seq-len N`); a positional is its metavar (`-- JOB_FLAGS`);
- default: `required`; `off` for a switch (store_true, False); `—` for no value (None, or an
  empty list for a repeatable flag; the meaning says what happens then); `today (UTC)` for the
  run date; otherwise the parser's default in a code span, numbers compared as numbers and
  paths inside the repository written relative to it (`dist`).
A section of flags several `python -m emr` sub-commands share says so on a line starting
"Taken by", naming each sub-command in a code span.

Examples. In README.md, emr/README.md and docs/*.md, every command in a fenced block or an
inline code span that runs one of these CLIs (or `make`, `pip install`) uses only flags and
sub-commands that exist; every repository path the docs name exists; every `dist/` file is one
that `make package` builds; a local `artifacts/`, `data/` or `out/` path is an output of an
earlier documented command in the same file; pip extras exist in pyproject.toml and the project
is installed from the checkout or its wheel, never by its name (it is on no package index).
A fenced block opened with ```text shows what a program prints, not commands, and is skipped.
"""
from __future__ import annotations

import argparse
import datetime as dt
import fnmatch
import importlib
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from compiler.centroid import build_parser as centroid_parser
from compiler.compile import build_parser as compile_parser
from emr import layout
from emr.cli import build_parser as emr_parser
from tests.test_readme_commands import DOCS, REPO

README, EMR_README = REPO / "README.md", REPO / "emr" / "README.md"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
HEADER = ["flag", "default", "meaning"]
NO_VALUE = "—"
WORDS = {"today (UTC)": lambda value: value == dt.datetime.now(dt.timezone.utc).date().isoformat()}
REPO_DIRS = ("engines", "udfs", "jobs", "emr", "bench", "tests", "docs")
GENERATED = ("artifacts", "data", "out")  # the folders `make clean` removes: outputs of documented commands
OUTPUT_FLAGS = {"--out", "--output", "--runs-dir", "--dist"}
# the Makefile and the files its `include` lines name (emr/package.mk, emr/airflow.mk, spark4.mk)
MAKEFILE = REPO / "Makefile"
MAKE_FILES = [MAKEFILE] + [REPO / name for line in re.findall(r"^include (.+)$", MAKEFILE.read_text(), re.M)
                           for name in line.split()]
# folders .gitignore keeps out of the repository (bench/results/tmp/): outputs, not sources
IGNORED_DIRS = tuple(line.strip().lstrip("/") for line in (REPO / ".gitignore").read_text().splitlines()
                     if line.strip().endswith("/"))
PLACEHOLDER = re.compile(r"[<…{$]|XXXX")


# ---------------------------------------------------------------- the docs' sections and tables

@dataclass
class Section:
    doc: Path
    heading: str
    lines: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO)} § {self.heading!r}"

    def table(self) -> list[dict[str, str]] | None:
        """The first table's rows as {column: cell}; None when the section has no table."""
        start = next((i for i, line in enumerate(self.lines) if line.startswith("|")), None)
        if start is None:
            return None
        block = []
        for line in self.lines[start:]:
            if not line.startswith("|"):
                break
            block.append(_cells(line))
        assert block[0] == HEADER, f"{self.where}: a flag table's header must be {HEADER}, got {block[0]}"
        return [dict(zip(HEADER, row)) for row in block[2:]]

    def taken_by(self) -> list[str]:
        return [name for line in self.lines if line.startswith("Taken by") for name in re.findall(r"`([^`]+)`", line)]


def _cells(row: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


def sections(doc: Path) -> list[Section]:
    out, fenced = [Section(doc, "")], False
    for line in doc.read_text().splitlines():
        fenced ^= line.lstrip().startswith("```")
        match = None if fenced else re.match(r"#{1,6} (.*)", line)
        if match:
            out.append(Section(doc, match.group(1).strip()))
        else:
            out[-1].lines.append(line)
    return out


def section(doc: Path, heading: str) -> Section | None:
    return next((s for s in sections(doc) if s.heading == heading), None)


# ---------------------------------------------------------------- what the parsers say

def option_key(action: argparse.Action) -> str:
    long = [o for o in action.option_strings if o.startswith("--")]
    return long[0] if long else action.metavar or action.dest


def parser_flags(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {option_key(a): a for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))}


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def documented_default(action: argparse.Action) -> str:
    """How the table's default cell writes this action's default (see the module docstring)."""
    if action.required and action.nargs not in ("*", "?"):  # argparse marks a bare nargs="*" required
        return "required"
    if isinstance(action, argparse._StoreTrueAction):
        return "off"
    if action.default in (None, []):
        return NO_VALUE
    if isinstance(action.default, Path) and action.default.is_relative_to(REPO):
        return f"`{action.default.relative_to(REPO).as_posix()}`"
    return f"`{action.default}`"


def same_default(cell: str, action: argparse.Action) -> bool:
    if cell in WORDS:
        return WORDS[cell](action.default)
    want = documented_default(action)
    if cell == want:
        return True
    try:
        return float(cell.strip("`")) == float(want.strip("`"))
    except ValueError:
        return False


def suggested_row(action: argparse.Action) -> str:
    key = option_key(action)
    flag = key if action.nargs == 0 or not action.option_strings else f"{key} {action.metavar or action.dest.upper()}"
    return f"| `{flag}` | {documented_default(action)} | {action.help or ''} |"


@dataclass
class Cli:
    name: str
    parser: argparse.ArgumentParser
    doc: Path
    headings: list[str]  # the sections whose tables together list its flags


def emr_clis() -> list[Cli]:
    shared = {s.heading: s.taken_by() for s in sections(EMR_README) if s.taken_by()}
    out = [Cli("python -m emr", emr_parser(), EMR_README, ["`python -m emr`"])]
    for name, sub in subcommands(emr_parser()).items():
        extra = [heading for heading, names in shared.items() if name in names]
        out.append(Cli(f"python -m emr {name}", sub, EMR_README, [f"`python -m emr {name}`", *extra]))
    return out


CLIS = [
    Cli("python -m compiler", compile_parser(), README, ["`python -m compiler`"]),
    Cli("python -m compiler.centroid", centroid_parser(), README, ["`python -m compiler.centroid`"]),
    *(Cli(f"jobs/{job}.py", importlib.import_module(f"jobs.{job}").build_parser(), README,
          ["The jobs", f"`jobs/{job}.py` only"]) for job in layout.JOBS),
    *emr_clis(),
]


def documented_rows(cli: Cli) -> dict[str, tuple[str, str, str]]:
    """flag -> (flag cell, default cell, where), from every section that documents the CLI."""
    rows: dict[str, tuple[str, str, str]] = {}
    for heading in cli.headings:
        found = section(cli.doc, heading)
        if found is None:
            continue
        for row in found.table() or []:
            span = re.fullmatch(r"`([^`]+)`", row["flag"])
            assert span, f"{found.where}: the flag cell {row['flag']!r} must be one code span, e.g. `--max-seq-len N`"
            text = span.group(1)
            key = text if text.startswith("-- ") else text.split()[0]
            assert key not in rows, f"{cli.name}: {key} has two rows, in {rows[key][2]} and {found.where}"
            rows[key] = (text, row["default"], found.where)
    return rows


# ---------------------------------------------------------------- flag tables

@pytest.mark.parametrize("cli", CLIS, ids=lambda c: c.name)
def test_flag_tables_list_exactly_the_parsers_flags_and_defaults(cli):
    flags, rows = parser_flags(cli.parser), documented_rows(cli)
    where = " or ".join(f"{cli.doc.relative_to(REPO)} § {h!r}" for h in cli.headings)
    problems = [f"{key} is in `{cli.name} --help` but in no table of {where}; its row: {suggested_row(flags[key])}"
                for key in flags if key not in rows]
    problems += [f"{key} is documented in {rows[key][2]} but `{cli.name} --help` has no such flag"
                 for key in rows if key not in flags]
    for key in flags.keys() & rows.keys():
        text, cell, found = rows[key]
        action = flags[key]
        if not same_default(cell, action):
            problems.append(f"{key}: {found} says default {cell!r}, the parser of {cli.name} has "
                            f"{action.default!r} (write it as {documented_default(action)!r})")
        takes_value = action.nargs != 0 and not key.startswith("-- ")
        if takes_value != (len(text.split()) > 1) and action.option_strings:
            problems.append(f"{key}: {found} writes {text!r}; "
                            + ("a flag that takes a value needs a placeholder after it" if takes_value
                               else "a switch takes no value, write the flag alone"))
    assert not problems, f"{cli.name}:\n  " + "\n  ".join(problems)


def test_every_emr_subcommand_has_a_section():
    headings = {s.heading for s in sections(EMR_README)}
    missing = [name for name in subcommands(emr_parser()) if f"`python -m emr {name}`" not in headings]
    assert not missing, f"emr/README.md has no section '`python -m emr NAME`' for sub-command(s) {missing}"
    for s in sections(EMR_README):
        unknown = set(s.taken_by()) - set(subcommands(emr_parser()))
        assert not unknown, f"{s.where}: 'Taken by' names {sorted(unknown)}, not sub-commands of python -m emr"


# ---------------------------------------------------------------- examples

@dataclass
class Snippet:
    doc: Path
    text: str
    in_block: bool

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO)}: `{self.text.strip()[:90]}`"


def snippets(doc: Path) -> list[Snippet]:
    """Fenced blocks' lines (comments dropped, `\\` continuations joined) and inline code spans, in order."""
    text = doc.read_text()
    out = []
    for match in re.finditer(r"^[ \t]*```([^\n]*)\n(.*?)^[ \t]*```|`([^`\n]+)`", text, re.S | re.M):
        info, block, span = match.groups()
        if block is not None and info.strip() == "text":
            continue
        if block is not None:
            joined = re.sub(r"\\\n\s*", " ", block)
            out += [Snippet(doc, re.sub(r"(^|\s)#.*$", "", line), True) for line in joined.splitlines()]
        else:
            out.append(Snippet(doc, span, False))
    return [s for s in out if s.text.strip()]


def words(snippet: Snippet) -> list[str]:
    try:
        return shlex.split(snippet.text)
    except ValueError:  # prose with an apostrophe
        return snippet.text.split()


def command(tokens: list[str]) -> tuple[str, list[str]] | None:
    """('python -m MOD' | 'job FILE' | 'make' | 'pip install', its arguments) for a command we check."""
    while tokens and re.fullmatch(r"[A-Z_]+=\S*", tokens[0]):
        tokens = tokens[1:]
    if not tokens:
        return None
    program, rest = Path(tokens[0]).name, tokens[1:]
    if re.fullmatch(r"python[0-9.]*", program) and rest[:1] == ["-m"] and len(rest) > 1:
        return f"python -m {rest[1]}", rest[2:]
    if re.fullmatch(r"python[0-9.]*|spark-submit", program):
        script = next((i for i, t in enumerate(rest) if t.endswith(".py") and not t.startswith("-")
                       and not (i and rest[i - 1].startswith("--"))), None)
        return (f"job {rest[script]}", rest[script + 1:]) if script is not None else None
    if program == "make":
        return "make", rest
    if re.fullmatch(r"pip[0-9.]*", program) and rest[:1] == ["install"]:
        return "pip install", rest[1:]
    return None


def make_targets() -> set[str]:
    """Every target a rule names, also rules with several targets (`bench bench-commit: …`)."""
    heads = [h for f in MAKE_FILES for h in re.findall(r"^([\w][\w -]*):(?!=)", f.read_text(), re.M)]
    return {target for head in heads for target in head.split()}


def package_outputs() -> list[str]:
    """What `make package` (emr/packaging.py) leaves in dist/."""
    version = PYPROJECT["project"]["version"]
    return [f"dist/accel_scoring-{version}-py3-none-any.whl", f"dist/{layout.PYFILES_ZIP}",
            f"dist/{layout.ENV_ARCHIVE}", f"dist/{layout.GPU_REQUIREMENTS}", f"dist/{layout.GPU_TORCH_REQUIREMENTS}"]


JOB_PARSERS = {f"jobs/{job}.py": importlib.import_module(f"jobs.{job}").build_parser() for job in layout.JOBS}
MODULE_PARSERS = {"python -m compiler": compile_parser(), "python -m compiler.centroid": centroid_parser()}


def flag_problems(parser: argparse.ArgumentParser, args: list[str], name: str) -> list[str]:
    known = {o for a in parser._actions for o in a.option_strings}
    return [f"{name} has no flag {arg.split('=')[0]}" for arg in args
            if arg.startswith("--") and len(arg) > 2 and arg.split("=")[0] not in known]


def emr_problems(args: list[str]) -> list[str]:
    subs = subcommands(emr_parser())
    if not args or args[0].startswith("-") or args[0].isupper():  # `python -m emr SUB --help`
        return []
    if args[0] not in subs:
        return [f"python -m emr has no sub-command {args[0]!r} (it has {sorted(subs)})"]
    own, job_flags = args[1:], []
    if "--" in own:
        cut = own.index("--")
        own, job_flags = own[:cut], own[cut + 1:]
    problems = flag_problems(subs[args[0]], own, f"python -m emr {args[0]}")
    if job_flags:
        job = own[own.index("--job") + 1] if "--job" in own else None
        parser = JOB_PARSERS.get(f"jobs/{job}.py")
        problems += flag_problems(parser, job_flags, f"jobs/{job}.py") if parser else ["flags after -- but no --job"]
    return problems


def command_problems(name: str, args: list[str]) -> list[str]:
    if name == "python -m emr":
        return emr_problems(args)
    if name in MODULE_PARSERS:
        return flag_problems(MODULE_PARSERS[name], args, name)
    if name.startswith("python -m "):
        module = name.removeprefix("python -m ").replace(".", "/")
        exists = (REPO / f"{module}.py").is_file() or (REPO / module / "__main__.py").is_file()
        return [] if exists else [f"there is no module {module} in the repository"]
    if name.startswith("job "):
        script = name.removeprefix("job ")
        if script not in JOB_PARSERS:
            return [] if PLACEHOLDER.search(script) else [f"{script} is not a job ({sorted(JOB_PARSERS)})"]
        return flag_problems(JOB_PARSERS[script], args, script)
    if name == "make":
        args = [a for a in args if not re.fullmatch(r"[A-Z_]+=\S*", a)]
        if args[:1] == ["-f"]:
            args = args[2:]
        return [f"make has no target {a!r} (Makefile and its includes)" for a in args if a not in make_targets()]
    if name == "pip install":
        return pip_problems(args)
    return []


def pip_problems(args: list[str]) -> list[str]:
    extras_known, problems = set(PYPROJECT["project"]["optional-dependencies"]), []
    for arg in args:
        target, _, extras = arg.partition("[")
        extras = [e for e in extras.rstrip("]").split(",") if e]
        if re.fullmatch(r"accel[-_]scoring", target, re.I):
            problems.append(f"`pip install {arg}`: accel-scoring is on no package index; install the checkout "
                            f"(`pip install -e '.[gpu]'`) or the wheel `make package` builds")
        ours = target in (".", "-e") or target.startswith("dist/accel_scoring")
        if ours:
            problems += [f"pip extra {e!r} is not in pyproject.toml ({sorted(extras_known)})"
                         for e in extras if e not in extras_known]
    return problems


def path_problems(snippet: Snippet, token: str, created: set[str], packaged: bool) -> list[str]:
    path = token.rstrip(".,;:)").split("::")[0].split("#")[0]
    path = re.sub(r"\[[\w,]+\]$", "", path)
    if PLACEHOLDER.search(path) or "://" in path:
        return []
    top = path.split("/")[0]
    if top in REPO_DIRS and "/" in path and not path.startswith(IGNORED_DIRS):
        return [] if list(REPO.glob(path.rstrip("/"))) else [f"{path} does not exist in the repository"]
    if path.startswith("dist/") and path != "dist/":
        if not any(fnmatch.fnmatch(out, path) for out in package_outputs()):
            return [f"{path} is not something `make package` builds ({package_outputs()})"]
        if snippet.in_block and not packaged:
            return [f"{path} is used before any documented `make package`"]
    if top in GENERATED and "/" in path and snippet.in_block:
        if not any(path == c or path.startswith(c.rstrip("/") + "/") for c in created):
            return [f"{path} is not written by an earlier documented command (an --out or --output)"]
    return []


def compiled_model(name: str, args: list[str]) -> tuple[str, str] | None:
    """(name, version) a documented compile or centroid command records, with its parser's defaults."""
    if name not in MODULE_PARSERS:
        return None
    try:
        parsed, _ = MODULE_PARSERS[name].parse_known_args(args)
    except SystemExit:
        return None
    return parsed.name or parsed.model.name, parsed.version


def model_uri_problems(token: str, compiled: set[tuple[str, str]]) -> list[str]:
    """A staged model's URI (emr/layout.py: <prefix>/models/<name>/<version>/) names a documented artifact."""
    match = re.search(r"://.*/models/([^/]+)/([^/]+)/", token)
    if not match or PLACEHOLDER.search(match.group(0)) or match.groups() in compiled:
        return []
    return [f"{token}: no earlier documented compile writes a model named {match.group(1)} "
            f"version {match.group(2)} (--name, --version); compiled so far: {sorted(compiled)}"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_documented_commands_paths_and_artifacts_exist(doc):
    problems, created, compiled, packaged = [], set(), set(), False
    for snippet in snippets(doc):
        tokens = words(snippet)
        found = command(tokens)
        args = found[1] if found else []
        outputs = {args[i + 1] for i, a in enumerate(args[:-1]) if a in OUTPUT_FLAGS}
        if found:
            problems += [f"{snippet.where}: {p}" for p in command_problems(found[0], args)]
        for token in tokens:
            if token not in outputs:
                problems += [f"{snippet.where}: {p}" for p in path_problems(snippet, token, created, packaged)]
            problems += [f"{snippet.where}: {p}" for p in model_uri_problems(token, compiled)]
        created |= outputs
        model = compiled_model(*found) if found else None
        compiled |= {model} if model else set()
        packaged |= found is not None and found[0] in ("make", "python -m emr") and args[:1] == ["package"]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_links_to_files_and_headings_resolve(doc):
    problems = []
    for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
        if "://" in target:
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        if not path.exists():
            problems.append(f"link ({target}): {file} does not exist")
        elif anchor and path.suffix == ".md" and anchor not in {slug(s.heading) for s in sections(path)}:
            problems.append(f"link ({target}): {path.relative_to(REPO)} has no heading with anchor #{anchor}")
    assert not problems, f"{doc.relative_to(REPO)}:\n  " + "\n  ".join(problems)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
