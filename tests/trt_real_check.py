"""Compares the engine, the build code and tests/fake_tensorrt.py with one real TensorRT release.

tests/test_trt_real_bindings.py runs it in a subprocess per release (a process imports one
`tensorrt`): `python -m tests.trt_real_check VERSION FOLDER STUB...` prints one JSON object:
  members  every `trt.…` name in engines/tensorrt.py and engines/trt_build.py, and every member
           of the fakes, that the real module lacks or has with another kind or signature
  enums    fake enum members whose value differs from the real one, or that do not exist
  build    per case, what build_serialized asked of mock.create_autospec(spec_set=True) copies of
           the real classes (network flags, builder flags set and cleared, whether TF32 stays
           on), with any call that fits no real signature or assignment to a read-only property
pybind11 keeps each method's signatures (one per overload) in its __doc__; they are the
reference for arity and parameter names.
"""
from __future__ import annotations

import ast
import enum
import inspect
import itertools
import json
import re
import sys
import types
from pathlib import Path
from unittest import mock

from engines import trt_build
from tests import fake_tensorrt as ft
from tests import trt_bindings

ROOT = Path(__file__).resolve().parent.parent
CODE = ("engines/tensorrt.py", "engines/trt_build.py")
NOT_TENSORRT = {"FakeCuda", "FakeTensorRT", "RecordingTrt", "_FakeModule", "_Enum"}
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


# ------------------------------------------------------------------ signatures


def _split(params: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in params:
        depth += ch in "([{<"
        depth -= ch in ")]}>"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [p.strip() for p in parts + [current] if p.strip()]


def real_signatures(member, name: str) -> list[tuple[tuple[str, ...], int, tuple[str, ...]]]:
    """(parameter names, how many are required, annotations) per overload, `self` left out."""
    out = []
    for line in (getattr(member, "__doc__", None) or "").splitlines():
        match = re.match(rf"^(?:\d+\. )?{re.escape(name)}\((.*)\) -> ", line)
        if not match or match.group(1) == "*args, **kwargs":
            continue
        params = [p for p in _split(match.group(1)) if not p.startswith("self")]
        names = tuple(p.split(":")[0].split("=")[0].strip() for p in params)
        notes = tuple(p.split(":", 1)[1].split(" = ")[0].strip() if ":" in p else "" for p in params)
        out.append((names, sum(" = " not in p for p in params), notes))
    return out


def _fake_signature(func) -> tuple[tuple[str, ...], int]:
    params = list(inspect.signature(func).parameters.values())[1:]
    return tuple(p.name for p in params), sum(p.default is inspect.Parameter.empty for p in params)


# ------------------------------------------------------------------ (a) members


def code_names(trt) -> list[str]:
    """Every `trt.A.B` the engine and the build code spell out must resolve on every pinned release
    (a name only some releases have goes through getattr with a default)."""
    problems = []
    for rel in CODE:
        for node in ast.walk(ast.parse((ROOT / rel).read_text())):
            chain, top = [], node
            while isinstance(top, ast.Attribute):
                chain.insert(0, top.attr)
                top = top.value
            if not (isinstance(top, ast.Name) and top.id == "trt" and chain) or isinstance(node.ctx, ast.Store):
                continue
            obj = trt
            for part in chain:
                obj = getattr(obj, part, None)
            if obj is None:
                problems.append(f"{rel}:{node.lineno} uses trt.{'.'.join(chain)}, which TensorRT {trt.__version__} lacks")
    return sorted(set(problems))


def _fake_classes(modules) -> dict[str, type]:
    found = {name: obj for name, obj in vars(ft).items() if isinstance(obj, type) and obj.__module__ == ft.__name__}
    for module in modules:
        found.update({name: obj for name, obj in vars(module).items() if isinstance(obj, type)})
    return {name: cls for name, cls in found.items() if not issubclass(cls, enum.Enum) and name not in NOT_TENSORRT}


def class_members(fake: type, real: type, version: str) -> list[str]:
    problems = []
    for name, value in vars(fake).items():
        if (name.startswith("_") and name != "__init__") or isinstance(value, (enum.Enum, enum.EnumMeta)):
            continue  # enums: see enum_values
        where = f"{real.__name__}.{name}"
        member = inspect.getattr_static(real, name, None)
        if name == "__init__" and not real_signatures(real.__init__, name):
            continue  # TensorRT has no constructor for it; the fake's is its own business
        if member is None:
            problems.append(f"{where} does not exist in TensorRT {version}")
        elif not callable(value):  # a property or a plain value in the fake
            if not isinstance(member, property):
                problems.append(f"{where} is a method in TensorRT {version}, a property in the fake")
        elif isinstance(member, property):
            problems.append(f"{where} is a property in TensorRT {version}, a method in the fake")
        else:
            names, required = _fake_signature(value)
            real_sigs = real_signatures(getattr(real, name), name)
            if not any(names == n and required == r for n, r, _ in real_sigs):
                shown = " or ".join(f"({', '.join(n)}; {r} required)" for n, r, _ in real_sigs) or "no signature found"
                problems.append(f"{where}: the fake takes ({', '.join(names)}; {required} required), "
                                f"TensorRT {version} takes {shown}")
    return problems


def members(trt, fakes) -> list[str]:
    problems = code_names(trt)
    for name, cls in sorted(_fake_classes(fakes).items()):
        real = getattr(trt, name, None)
        if not isinstance(real, type):
            problems.append(f"the fake class {name} has no counterpart in TensorRT {trt.__version__}")
            continue
        problems += class_members(cls, real, trt.__version__)
    return problems


# ------------------------------------------------------------------ (b) enums


def _resolve(obj, path: str):
    for part in path.split("."):
        obj = getattr(obj, part, None)
    return obj


def enum_values(trt, fakes) -> list[str]:
    problems = []
    table = ft.ENUMS[int(trt.__version__.split(".")[0])]
    for path, fake_members in table.items():
        real = _resolve(trt, path)
        real_members = {k: int(v) for k, v in getattr(real, "__members__", {}).items()}
        for name, value in fake_members.items():
            if name not in real_members:
                problems.append(f"{path}.{name} does not exist in TensorRT {trt.__version__}")
            elif real_members[name] != value:
                problems.append(f"{path}.{name} is {real_members[name]} in TensorRT {trt.__version__}, "
                                f"{value} in tests/fake_tensorrt.py")
        for fake in fakes:  # and the fakes really take their values from that table
            got = {k: int(v) for k, v in _resolve(fake, path).__members__.items()}
            if got != fake_members:
                problems.append(f"{type(fake).__name__}.{path} is {got}, not ENUMS' {fake_members}")
    return problems


# ------------------------------------------------------------------ (c) the build against autospecs


def _call_fits(trt, real_cls, method: str, args, kwargs) -> str | None:
    member = real_cls.__init__ if method == "__init__" else getattr(real_cls, method)
    for names, required, notes in real_signatures(member, method):
        bound = dict(zip(names, args))
        if len(args) > len(names) or set(kwargs) - set(names[len(args):]):
            continue
        bound.update(kwargs)
        if not set(names[:required]) <= set(bound):
            continue
        wrong = [n for n, note in zip(names, notes) if n in bound and _enum_type(trt, note)
                 and not isinstance(bound[n], _enum_type(trt, note))]
        if not wrong:
            return None
    return f"{real_cls.__name__}.{method}{tuple(args)}{kwargs or ''} fits no signature of TensorRT {trt.__version__}"


def _enum_type(trt, note: str):
    cls = getattr(trt, note.rsplit(".", 1)[-1], None)
    return cls if isinstance(cls, type) and hasattr(cls, "__members__") else None


def _calls(trt, spy, real_cls) -> list[str]:
    problems = []
    for name, args, kwargs in spy.mock_calls:
        if "." in name or "(" in name:
            continue  # a call on a child: checked on the child
        problem = _call_fits(trt, real_cls, name or "__init__", args, kwargs)
        if problem:
            problems.append(problem)
    return problems


def _writes(spy, real_cls, before: set) -> list[str]:
    """Attributes the code assigned must be writable properties of the real class."""
    problems = []
    for name in set(vars(spy)) - before:
        member = inspect.getattr_static(real_cls, name, None)
        if member is not None and not (isinstance(member, property) and member.fset is not None):
            problems.append(f"{real_cls.__name__}.{name} is not a writable property, and the build assigns it")
    return problems


def build_case(trt, precision: str, version_compatible: bool = False, parse_ok: bool = True) -> dict:
    spies = {}  # id -> [autospec copy, its real class, the attributes it had before the build]

    def spy(cls, **kw):
        made = mock.create_autospec(cls, spec_set=True, **kw)
        spies[id(made)] = [made, cls, set(vars(made))]
        return made

    builder_cls, parser_cls = spy(trt.Builder), spy(trt.OnnxParser)
    builder, parser = builder_cls.return_value, parser_cls.return_value
    spies[id(builder)], spies[id(parser)] = [builder, trt.Builder, None], [parser, trt.OnnxParser, None]
    network, config = spy(trt.INetworkDefinition, instance=True), spy(trt.IBuilderConfig, instance=True)
    profiles = []
    builder.create_network.return_value = network
    builder.create_builder_config.return_value = config
    builder.create_optimization_profile.side_effect = lambda: profiles.append(
        spy(trt.IOptimizationProfile, instance=True)) or profiles[-1]
    builder.build_serialized_network.return_value = b"plan"
    config.add_optimization_profile.side_effect = lambda profile, index=itertools.count(): next(index)
    tf32 = 1 << int(trt.BuilderFlag.TF32)
    config.flags = tf32  # TensorRT's default: TF32 on
    parser.parse_from_file.return_value = parse_ok
    parser.num_errors = 1
    parser.get_error.return_value = "In node 3 (GatherND): unsupported"
    for entry in spies.values():  # what this harness set up is not the build's doing
        entry[2] = set(vars(entry[0]))

    module = types.ModuleType("tensorrt")
    module.__dict__.update({k: v for k, v in vars(trt).items() if not k.startswith("__")})
    module.__version__, module.Builder, module.OnnxParser = trt.__version__, builder_cls, parser_cls
    spec = trt_build.BuildSpec(onnx="tensorrt/model.onnx", precision=precision, version_compatible=version_compatible,
                               profiles=tuple(trt_build.profiles_for([(32, 64), (16, 128)], 128)))
    result = {"error": None}
    try:
        result["plan"] = trt_build.build_serialized(module, Path("model.onnx"), spec, INPUTS,
                                                    trt.Logger(trt.Logger.WARNING)) == b"plan"
    except Exception as e:  # noqa: BLE001 - reported, so the other cases still run
        result["error"] = f"{type(e).__name__}: {e}"
    problems = []
    for made, cls, before in spies.values():
        problems += _calls(trt, made, cls) + _writes(made, cls, before)
    flags = [(name, getattr(args[0], "name", repr(args[0])))
             for name, args, _ in config.mock_calls if name in ("set_flag", "clear_flag")]
    tf32_on = True
    for how, flag in flags:
        tf32_on = how == "set_flag" if flag == "TF32" else tf32_on
    if config.flags != tf32:  # the build assigned the whole bit field instead
        tf32_on = bool(config.flags & tf32)
    result.update(
        network_flags=[int((*c.args, *c.kwargs.values())[0]) for c in builder.create_network.call_args_list],
        set=[f for how, f in flags if how == "set_flag"], cleared=[f for how, f in flags if how == "clear_flag"],
        tf32=tf32_on, profiles=len(profiles), problems=problems)
    return result


CASES = {"fp16": ("fp16",), "bf16": ("bf16",), "fp32": ("fp32",), "fp16-version-compatible": ("fp16", True),
         "parse-error": ("fp16", False, False)}


def main(version: str, folder: str, *stubs: str) -> dict:
    trt = trt_bindings.load(Path(folder), [Path(s) for s in stubs])
    assert trt.__version__ == version, f"{folder} holds TensorRT {trt.__version__}, not {version}"
    fakes = [ft.FakeTensorRT(ft.FakeCuda(), version=version), ft.RecordingTrt(version=version)]
    return {"version": trt.__version__, "strongly_typed": int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED),
            "members": members(trt, fakes), "enums": enum_values(trt, fakes),
            "build": {case: build_case(trt, *args) for case, args in CASES.items()}}


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:]), indent=1))
