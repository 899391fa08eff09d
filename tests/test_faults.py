"""The test-only fault hook itself (udfs/faults.py): parsing, once-only firing, the memory limit."""
import numpy as np
import pytest

from tests.fakes import RowEchoEngine
from udfs import faults
from udfs.execute import run_encoded
from udfs.tokenize import Encoded


class FakeTaskContext:
    """What maybe_inject reads from pyspark's TaskContext (3.5 has no stageAttemptNumber)."""

    def __init__(self, partition: int, attempt: int = 0):
        self._partition, self._attempt = partition, attempt

    def partitionId(self) -> int:
        return self._partition

    def attemptNumber(self) -> int:
        return self._attempt


def test_parse_accepts_several_faults_and_rejects_unknown_kinds():
    assert faults.parse("raise_once:1, kill_worker:3,oom_rows:4") == [("raise_once", 1), ("kill_worker", 3), ("oom_rows", 4)]
    assert faults.parse("") == [] and faults.parse(None) == []
    with pytest.raises(ValueError, match="expected <kind>:<number>"):
        faults.parse("explode:1")
    with pytest.raises(ValueError, match="expected <kind>:<number>"):
        faults.parse("raise_once")


def test_off_by_default(monkeypatch):
    monkeypatch.delenv(faults.ENV, raising=False)
    faults.maybe_inject(FakeTaskContext(0))
    runtime = object()
    assert faults.limit_capacity(runtime) is runtime


def test_raise_once_fires_on_the_first_attempt_of_its_partition_only(monkeypatch):
    monkeypatch.setenv(faults.ENV, "raise_once:2")
    monkeypatch.delenv(faults.ONCE_DIR_ENV, raising=False)
    faults.maybe_inject(FakeTaskContext(1))
    faults.maybe_inject(FakeTaskContext(2, attempt=1))
    with pytest.raises(RuntimeError, match=r"injected fault \(ACCEL_SCORING_FAULT=raise_once:2\)"):
        faults.maybe_inject(FakeTaskContext(2))


def test_with_a_marker_folder_a_fault_fires_once_across_attempts(monkeypatch, tmp_path):
    """A retried stage starts task attempts at 0 again; the marker keeps the fault from refiring."""
    monkeypatch.setenv(faults.ENV, "raise_once:0")
    monkeypatch.setenv(faults.ONCE_DIR_ENV, str(tmp_path))
    with pytest.raises(RuntimeError):
        faults.maybe_inject(FakeTaskContext(0))
    faults.maybe_inject(FakeTaskContext(0))
    assert [p.name for p in tmp_path.iterdir()] == ["raise_once-0"]


def test_capacity_limit_raises_memory_error_that_the_executor_splits_around(monkeypatch):
    import dataclasses

    @dataclasses.dataclass
    class Runtime:
        engine: object

    monkeypatch.setenv(faults.ENV, "oom_rows:3")
    limited = faults.limit_capacity(Runtime(RowEchoEngine(max_seq_len=64))).engine
    assert isinstance(limited, faults.CapacityLimitedEngine) and limited.max_rows == 3
    lengths = [12] * 20
    enc = Encoded([np.arange(1, n + 1) for n in lengths], [np.zeros(n, dtype=np.int64) for n in lengths], np.zeros(20, bool))
    result = run_encoded(limited, enc, token_budget=16 * 20)
    assert all(e is None for e in result.errors) and result.stats.retries > 0
    assert limited._engine.calls and max(shape[0] for shape in limited._engine.calls) <= 3


def test_capacity_limit_keeps_a_pipelined_engine_pipelined():
    from tests.test_engine_pipeline import DeferredEchoEngine

    engine = DeferredEchoEngine(max_seq_len=64)
    limited = faults.CapacityLimitedEngine(engine, max_rows=2)
    lengths = [10] * 12
    enc = Encoded([np.arange(1, n + 1) for n in lengths], [np.zeros(n, dtype=np.int64) for n in lengths], np.zeros(12, bool))
    result = run_encoded(limited, enc, token_budget=16 * 12)
    assert limited.pipeline_depth == 2 and engine.max_in_flight == 2
    assert all(e is None for e in result.errors) and result.stats.retries > 0
    assert max(shape[0] for shape in engine.calls) <= 2
