"""The engine interface's additions for accelerators: pipelined submit/result, and refusing
artifacts whose parity failed. Plain CPU fakes; no device involved."""
import numpy as np
import pytest

from engines.base import Device
from engines.errors import ParityError
from tests.fakes import RowEchoEngine, random_encoded
from udfs.execute import run_encoded


class DeferredEchoEngine(RowEchoEngine):
    """RowEchoEngine whose submit() returns before "the device" runs, like TensorRTEngine.

    Proves the scorer keeps two batches in flight, collects them in order, and isolates a
    failure that only shows when a result is collected. Says nothing about CUDA streams.
    """

    pipeline_depth = 2

    def __init__(self, *args, fail_on_result_if=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.in_flight = 0
        self.max_in_flight = 0
        self.fail_on_result_if = fail_on_result_if

    def _submit(self, feed):
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        engine = self

        class Handle:
            def result(self_inner):
                engine.in_flight -= 1
                if engine.fail_on_result_if and engine.fail_on_result_if(feed["input_ids"]):
                    raise RuntimeError("fake asynchronous CUDA error")
                return engine._infer(feed)

        return Handle()


def test_pipelined_engine_gives_the_same_outputs_with_two_batches_in_flight():
    lengths = np.random.default_rng(3).integers(2, 60, 200)
    enc = random_encoded(lengths)
    engine = DeferredEchoEngine(max_seq_len=64)
    result = run_encoded(engine, enc, token_budget=256)
    reference = run_encoded(RowEchoEngine(max_seq_len=64), enc, token_budget=256)
    assert engine.max_in_flight == 2 and engine.in_flight == 0
    np.testing.assert_array_equal(result.outputs, reference.outputs)
    assert result.stats.batches == reference.stats.batches


def test_failure_seen_at_result_time_is_isolated_to_its_row():
    enc = random_encoded([10] * 16)
    enc.ids[9][0] = poison = 7
    engine = DeferredEchoEngine(fail_on_result_if=lambda ids: (ids == poison).any())
    result = run_encoded(engine, enc, token_budget=16 * 16)
    assert [i for i, e in enumerate(result.errors) if e] == [9]
    assert result.errors[9].startswith("engine_error: RuntimeError: fake asynchronous CUDA error")


def test_submit_on_a_synchronous_engine_returns_the_finished_result():
    engine = RowEchoEngine()
    ids = np.array([[5, 6, 0]])
    feed = {"input_ids": ids, "attention_mask": (ids > 0).astype(int), "token_type_ids": ids * 0}
    np.testing.assert_array_equal(engine.submit(feed).result(), engine.infer(feed))


def test_engines_refuse_an_artifact_whose_parity_failed(compile_artifact):
    import dataclasses

    from engines.registry import engine_class
    from engines.store import open_artifact

    folder = compile_artifact("pair-classification")
    failed = dataclasses.replace(open_artifact(folder), parity={"passed": False, "max_abs_diff": 0.3})
    with pytest.raises(ParityError, match="failed its parity check and is refused"):
        engine_class("onnx")(folder, failed, Device()).load()
