import numpy as np
import pytest

from tests.fakes import RowEchoEngine, random_encoded
from udfs.execute import run_encoded


def test_outputs_come_back_in_input_order():
    lengths = np.random.default_rng(1).integers(2, 60, 300)
    enc = random_encoded(lengths)
    result = run_encoded(RowEchoEngine(max_seq_len=64), enc, token_budget=256)
    assert result.outputs[:, 0].tolist() == [float(x.sum()) for x in enc.ids]
    assert result.outputs[:, 1].tolist() == lengths.tolist()
    assert result.stats.real_tokens == lengths.sum()
    assert result.stats.padded_tokens >= lengths.sum()
    assert all(e is None for e in result.errors)


def test_failing_batches_are_split_until_only_the_bad_row_fails():
    enc = random_encoded([10] * 16)
    enc.ids[5][0] = poison = 7  # no other row holds token 7
    engine = RowEchoEngine(fail_if=lambda ids, mask: (ids == poison).any())
    result = run_encoded(engine, enc, token_budget=16 * 16)
    assert result.errors[5].startswith("engine_error: MemoryError")
    assert [i for i, e in enumerate(result.errors) if e] == [5]
    assert np.isnan(result.outputs[5]).all() and not np.isnan(np.delete(result.outputs, 5, axis=0)).any()
    assert result.stats.retries >= 4


def test_oversized_batches_are_split_and_retried():
    enc = random_encoded([30] * 12)
    engine = RowEchoEngine(fail_if=lambda ids, mask: ids.shape[0] > 3)
    result = run_encoded(engine, enc, token_budget=32 * 12)
    assert all(e is None for e in result.errors)
    assert max(shape[0] for shape in engine.calls if shape[0] <= 3) == 3


def test_static_engine_pads_to_buckets():
    enc = random_encoded([5, 6, 30])
    engine = RowEchoEngine(static=True, buckets=((4, 8), (2, 32)))
    result = run_encoded(engine, enc, token_budget=0)
    assert sorted(engine.calls) == [(2, 32), (4, 8)]
    assert result.outputs[:, 2].tolist() == [8, 8, 32]


def test_onnx_runtime_batches_are_padded_to_their_longest_row_exactly(compile_artifact):
    # The CPU engine gains nothing from lengths rounded to 8; short queries would lose ~30% to it.
    from engines.registry import engine_class
    from engines.store import open_artifact

    folder = compile_artifact("embedding")
    with engine_class("onnx")(folder, open_artifact(folder)) as engine:
        assert engine.spec.pad_multiple == 1
        enc = random_encoded([5, 6, 7, 9, 11])
        result = run_encoded(engine, enc, token_budget=10_000)
    assert result.stats.padded_tokens == 5 * 11 and result.stats.real_tokens == 38


def test_a_refused_engine_call_fails_the_task_instead_of_splitting():
    """The runtime refusing the engine's own call (a shape, an address) fails every batch alike:
    splitting would retry it down to single rows and turn one bug into a column of row errors."""
    from engines.errors import EngineCallError

    class Refusing(RowEchoEngine):
        def _infer(self, feed):
            self.calls.append(feed["input_ids"].shape)
            raise EngineCallError("TensorRT refused the address 0x10 of logits")

    engine = Refusing()
    with pytest.raises(EngineCallError, match="refused the address"):
        run_encoded(engine, random_encoded([10] * 16), token_budget=16 * 16)
    assert len(engine.calls) == 1


def test_every_row_is_reported_settled_once_even_the_one_that_fails():
    """Live progress counts rows as their device batches settle, retries and failures included."""
    enc = random_encoded([10] * 16)
    enc.ids[5][0] = poison = 7
    engine = RowEchoEngine(fail_if=lambda ids, mask: (ids == poison).any())
    settled = []
    run_encoded(engine, enc, token_budget=4 * 16, on_rows=lambda rows: settled.extend(int(r) for r in rows))
    assert sorted(settled) == list(range(16))


@pytest.mark.parametrize("task", ["text-classification", "pair-classification", "embedding"])
def test_an_input_repeated_within_a_batch_goes_through_the_engine_once(task, minilm_dir):
    """The per-batch plan's promise: identical texts (a query, a cross-encoder's pair, a bi-encoder's
    side) are scored once per Arrow batch, and every row that repeats one gets its output."""
    from types import SimpleNamespace

    from udfs import model_outputs
    from udfs.tokenize import TextEncoder

    runtime = SimpleNamespace(manifest=SimpleNamespace(task=task, positive_label=1), engine=RowEchoEngine(),
                              encoder=TextEncoder(minilm_dir / "tokenizer.json", max_seq_len=64))
    queries = ["red shoes", "blue hat", "red shoes", "green bag", "red shoes", "blue hat"]
    if task == "text-classification":  # one slot: the query
        slots, keys, distinct = [[queries]], [queries], 3
    elif task == "embedding":  # a bi-encoder pair's two slots, its sides: 3 distinct texts in all
        slots, keys, distinct = [[queries], [queries[::-1]]], [queries, queries[::-1]], 3
    else:  # one slot, the pair: (red, blue) and (blue, red) twice each
        slots, keys, distinct = [[queries, queries[::-1]]], [list(zip(queries, queries[::-1]))], 4
    tok = model_outputs.tokenize_units(runtime, slots)
    scored = model_outputs.run_units(runtime, tok, token_budget=512)
    assert sum(rows for rows, _ in runtime.engine.calls) == len(tok.enc.lengths) == distinct
    assert scored.stats.real_tokens == tok.enc.lengths.sum()
    firsts = {}
    for slot, slot_keys in enumerate(keys):
        for row, key in enumerate(slot_keys):
            first = firsts.setdefault(key, (slot, row))
            np.testing.assert_array_equal(scored.outputs[slot, row], scored.outputs[first])
    assert scored.errors.shape == scored.truncated.shape == (len(slots), len(queries))
