"""The TensorRT code and its fakes against the real `tensorrt` bindings of each pinned release, on the CPU.

Per release (tests/trt_bindings.py: downloaded once into ~/.cache/accel-scoring/, C libraries
stubbed), a subprocess runs tests/trt_real_check.py, which imports the real module and reports
what differs. Proves: every name, kind, signature and enum value the engine, the build code and
tests/fake_tensorrt.py rely on is the real one, and the build's calls fit the real classes. Does
not prove: anything TensorRT does when called (no library code, no kernel ever runs).
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import trt_bindings
from tests.fake_tensorrt import PINNED

ROOT = Path(__file__).resolve().parent.parent
BUILDS = ("fp16", "bf16", "fp32", "fp16-version-compatible")


@pytest.fixture(scope="module", params=PINNED)
def report(request, tmp_path_factory) -> dict:
    version = request.param
    try:
        folder = trt_bindings.fetch(version)
        stubs = trt_bindings.build_stubs(trt_bindings.extension(folder), tmp_path_factory.mktemp(f"trt-stub-{version}"))
    except trt_bindings.Unavailable as e:
        pytest.skip(str(e))
    proc = subprocess.run([sys.executable, "-m", "tests.trt_real_check", version, str(folder), *map(str, stubs)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_every_member_the_code_and_the_fakes_use_is_real(report):
    assert report["members"] == []


def test_the_fakes_enum_values_are_the_real_ones(report):
    assert report["enums"] == []


@pytest.mark.parametrize("case", BUILDS)
def test_the_build_fits_the_real_classes(report, case):
    build = report["build"][case]
    assert build["error"] is None and build["plan"] is True
    assert build["problems"] == []
    # Strongly typed: 10.x sets the creation flag (in its own numbering); 11 always is, and deprecates it.
    assert build["network_flags"] == [1 << report["strongly_typed"] if report["version"].startswith("10.") else 0]
    assert not {"FP16", "BF16", "INT8", "FP8"} & set(build["set"])  # precision comes from the graph
    assert ("VERSION_COMPATIBLE" in build["set"]) == case.endswith("version-compatible")
    assert build["profiles"] == 2


def test_an_fp32_build_turns_tf32_off(report):
    """TF32 is on by default: an fp32 plan would round matmul inputs and miss the 1e-4 logits gate."""
    fp32 = report["build"]["fp32"]
    assert fp32["tf32"] is False and fp32["cleared"] == ["TF32"] and fp32["set"] == []
    assert all(report["build"][case]["tf32"] for case in BUILDS if case != "fp32")  # half plans keep the default


def test_parse_errors_carry_the_parsers_messages(report):
    build = report["build"]["parse-error"]
    assert build["error"] == "BuildError: TensorRT could not parse model.onnx: In node 3 (GatherND): unsupported"
    assert build["problems"] == []
