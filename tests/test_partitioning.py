"""jobs/partitioning.py: the scoring tasks follow the rows and the cores, not the input's file layout."""
from jobs.partitioning import ROWS_PER_TASK, decide


def test_one_row_group_of_a_million_rows_is_spread_over_the_cores_and_bounded_tasks():
    layout = decide([1_000_000, 0], cores=2, arrow_batch_rows=4096)
    assert layout.spread and layout.tasks == 1_000_000 // ROWS_PER_TASK
    assert layout.input_partitions == 1 and layout.largest_input_partition == 1_000_000
    assert "all in one input partition" in layout.reason


def test_one_big_partition_among_many_is_spread():
    assert decide([900_000] + [10_000] * 10, cores=4, arrow_batch_rows=4096).spread


def test_small_files_already_even_over_the_cores_keep_their_partitions():
    layout = decide([50_000] * 16, cores=4, arrow_batch_rows=4096)
    assert not layout.spread and layout.tasks == 16


def test_no_task_smaller_than_one_arrow_batch():
    assert decide([1_000], cores=8, arrow_batch_rows=4096).tasks == 1
    layout = decide([10_000], cores=8, arrow_batch_rows=4096)
    assert layout.spread and layout.tasks == 3 and "Arrow batch" in layout.reason


def test_num_partitions_overrides_and_empty_input_has_one_task():
    assert decide([1_000_000], cores=2, arrow_batch_rows=4096, num_partitions=3).tasks == 3
    assert decide([], cores=2, arrow_batch_rows=4096).tasks == 1
