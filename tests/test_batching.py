import numpy as np
import pytest

from udfs.batching import DeviceBatch, pad, plan_batches, round_up


def _lengths(n=500, seed=0):
    return np.random.default_rng(seed).integers(3, 200, n)


def test_every_row_in_exactly_one_batch_and_sorted():
    lengths = _lengths()
    plan = plan_batches(lengths, 2048, max_seq_len=256)
    rows = np.concatenate([b.rows for b in plan])
    assert sorted(rows.tolist()) == list(range(len(lengths)))
    fed = lengths[rows]
    assert (np.diff(fed) >= 0).all()


def test_token_budget_and_padding_to_multiple_of_8():
    lengths = _lengths()
    for b in plan_batches(lengths, 2048, max_seq_len=256):
        assert b.seq_len % 8 == 0 and b.seq_len >= lengths[b.rows].max()
        assert b.seq_len < lengths[b.rows].max() + 8
        assert b.padded_tokens <= 2048 or len(b.rows) == 1


def test_single_row_larger_than_budget_still_runs():
    plan = plan_batches(np.array([300, 5]), 64, max_seq_len=512)
    assert [len(b.rows) for b in plan] == [1, 1]
    assert plan[1].seq_len == 304


def test_padding_never_exceeds_max_seq_len():
    plan = plan_batches(np.array([99, 100]), 4096, max_seq_len=100)
    assert plan[0].seq_len == 100


def test_ties_are_broken_by_position_so_plans_are_deterministic():
    lengths = np.array([5, 5, 5, 3, 5])
    assert np.concatenate([b.rows for b in plan_batches(lengths, 8, max_seq_len=64)]).tolist() == [3, 0, 1, 2, 4]


def test_static_buckets_pick_smallest_fitting_shape_and_batch_size():
    lengths = np.array([10] * 5 + [40] * 3)
    plan = plan_batches(lengths, 0, max_seq_len=64, buckets=((4, 16), (2, 64)), static=True)
    assert [(len(b.rows), b.seq_len, b.batch_size) for b in plan] == [(4, 16, 4), (1, 16, 4), (2, 64, 2), (1, 64, 2)]


def test_static_rejects_rows_longer_than_every_bucket():
    with pytest.raises(ValueError, match="exceeds the largest compiled bucket 16"):
        plan_batches(np.array([20]), 0, max_seq_len=64, buckets=((4, 16),), static=True)


def test_pad_builds_mask_and_type_ids():
    ids = [np.array([101, 7, 102]), np.array([101, 8, 9, 102, 10, 102])]
    types = [np.zeros(3, int), np.array([0, 0, 0, 0, 1, 1])]
    feed = pad(ids, types, DeviceBatch(np.array([1, 0]), 8, 3))
    assert feed["input_ids"].shape == (3, 8)
    assert feed["input_ids"][0, :6].tolist() == [101, 8, 9, 102, 10, 102]
    assert feed["attention_mask"].sum(1).tolist() == [6, 3, 1]  # filler row attends to one token
    assert feed["token_type_ids"][0].tolist() == [0, 0, 0, 0, 1, 1, 0, 0]


def test_round_up():
    assert [round_up(n, 8) for n in (1, 8, 9, 16)] == [8, 8, 16, 16]


def test_pad_equals_writing_each_row_on_its_own():
    rng = np.random.default_rng(4)
    ids = [rng.integers(1000, 3000, n) for n in rng.integers(1, 40, 50)]
    types = [rng.integers(0, 2, len(x)) for x in ids]
    for batch in (DeviceBatch(np.array([3, 7, 1, 0]), 40, 4), DeviceBatch(np.array([9, 2]), 48, 5),
                  DeviceBatch(np.array([11]), 40, 1)):
        feed = pad(ids, types, batch)
        want_ids = np.zeros((batch.batch_size, batch.seq_len), dtype=np.int64)
        want_types, want_mask = want_ids.copy(), want_ids.copy()
        for slot, row in enumerate(batch.rows):
            n = len(ids[row])
            want_ids[slot, :n], want_types[slot, :n], want_mask[slot, :n] = ids[row], types[row], 1
        want_mask[len(batch.rows):, 0] = 1
        assert np.array_equal(feed["input_ids"], want_ids) and np.array_equal(feed["token_type_ids"], want_types)
        assert np.array_equal(feed["attention_mask"], want_mask)
        assert all(v.dtype == np.int64 for v in feed.values())


def _per_row_plan(lengths, token_budget, max_seq_len, pad_multiple):
    """The dynamic plan stepped row by row: the rule plan_batches implements with one search a batch."""
    order = np.lexsort((np.arange(len(lengths)), lengths))
    plan, start = [], 0
    while start < len(order):
        end, seq = start, 0
        while end < len(order):
            seq_next = min(round_up(int(lengths[order[end]]), pad_multiple), max(max_seq_len, pad_multiple))
            if end > start and seq_next * (end - start + 1) > token_budget:
                break
            seq, end = seq_next, end + 1
        plan.append((order[start:end].tolist(), seq, end - start))
        start = end
    return plan


def test_dynamic_plan_equals_stepping_row_by_row():
    rng = np.random.default_rng(5)
    for trial in range(300):
        lengths = rng.integers(0 if trial % 5 == 0 else 1, int(rng.choice([4, 40, 600])), int(rng.integers(0, 200)))
        budget, max_seq_len = int(rng.choice([-1, 0, 8, 64, 2048])), int(rng.choice([1, 16, 512]))
        pad_multiple = int(rng.choice([1, 8]))
        got = [(b.rows.tolist(), b.seq_len, b.batch_size)
               for b in plan_batches(lengths, budget, max_seq_len=max_seq_len, pad_multiple=pad_multiple)]
        assert got == _per_row_plan(lengths, budget, max_seq_len, pad_multiple)
