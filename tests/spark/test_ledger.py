"""The pure bookkeeping of the Spark spout: partitions to tasks, and per partition
which rows are in flight, acked, replayed, done."""

from __future__ import annotations

import pytest

from storm_zmq.spark.ledger import PartitionLedger, partitions_for_task, task_index


def context(task: int, tasks: dict[int, str], component: str = "spout") -> dict:
    return {"taskid": task, "componentid": component,
            "task->component": {str(t): c for t, c in tasks.items()}}


def test_task_index_is_the_position_among_the_components_tasks() -> None:
    tasks = {1: "__acker", 3: "spout", 4: "bolt", 7: "spout", 9: "spout"}
    assert task_index(context(3, tasks)) == (0, 3)
    assert task_index(context(7, tasks)) == (1, 3)
    assert task_index(context(9, tasks)) == (2, 3)
    assert task_index(context(5, {5: "spout"})) == (0, 1)


@pytest.mark.parametrize("partitions", [0, 1, 7, 8, 13])
@pytest.mark.parametrize("tasks", [1, 2, 3, 5])
def test_every_partition_goes_to_exactly_one_task_p_mod_n(partitions: int, tasks: int) -> None:
    shares = [partitions_for_task(partitions, i, tasks) for i in range(tasks)]
    assert sorted(p for share in shares for p in share) == list(range(partitions))
    for index, share in enumerate(shares):
        assert all(p % tasks == index for p in share)
        assert share == sorted(share)


def test_a_bad_task_index_is_refused() -> None:
    with pytest.raises(ValueError):
        partitions_for_task(4, 2, 2)


def test_a_partition_is_done_when_every_row_is_acked() -> None:
    ledger = PartitionLedger([0, 2])
    assert not ledger.open(0, 3)
    assert list(ledger.take_new(0, 2)) == [0, 1]
    assert list(ledger.take_new(0, 5)) == [2]
    assert list(ledger.take_new(0, 5)) == []
    assert ledger.fully_emitted(0) and ledger.in_flight == 3
    assert not ledger.ack(0, 1)
    assert not ledger.ack(0, 1), "a duplicate ack is ignored"
    assert not ledger.ack(0, 0)
    assert ledger.ack(0, 2), "the last ack completes the partition"
    assert ledger.is_done(0) and ledger.partitions_done == 1 and not ledger.all_done
    assert not ledger.ack(0, 2), "acks after done are ignored"
    assert ledger.open(2, 0), "an empty partition is done at once"
    assert ledger.all_done and ledger.rows_acked == 3 and ledger.in_flight == 0


def test_failed_rows_are_replayed_first_in_first_out_until_acked() -> None:
    ledger = PartitionLedger([5])
    ledger.open(5, 4)
    assert list(ledger.take_new(5, 4)) == [0, 1, 2, 3]
    assert ledger.fail(5, 2) and ledger.fail(5, 0)
    assert not ledger.fail(5, 0), "a row not in flight cannot fail again"
    assert ledger.outstanding(5) == {0, 1, 2, 3}
    assert ledger.ack(5, 1) is False and ledger.ack(5, 3) is False
    assert not ledger.is_done(5), "failed rows keep the partition open"
    assert ledger.replays_waiting == 2
    assert ledger.take_replay() == (5, 2)
    assert ledger.take_replay() == (5, 0)
    assert ledger.take_replay() is None
    assert ledger.fail(5, 0)  # failed again (e.g. timed out): replayed again
    assert ledger.take_replay() == (5, 0)
    assert not ledger.ack(5, 2)
    assert ledger.ack(5, 0)
    assert ledger.all_done
    assert ledger.replayed == 3 and ledger.failures == 3 and ledger.rows_acked == 4


def test_max_fails_gives_up_on_a_row_and_settles_it() -> None:
    ledger = PartitionLedger([0], max_fails=1)
    ledger.open(0, 2)
    ledger.take_new(0, 2)
    ledger.ack(0, 1)
    assert ledger.fail(0, 0)
    assert ledger.take_replay() == (0, 0)
    assert not ledger.fail(0, 0), "second failure: given up"
    assert ledger.given_up == 1 and ledger.is_done(0) and ledger.all_done


def test_untracked_rows_count_as_acked_at_once() -> None:
    ledger = PartitionLedger([1])
    ledger.open(1, 3)
    assert list(ledger.take_new(1, 2, track=False)) == [0, 1]
    assert ledger.in_flight == 0 and ledger.rows_acked == 2 and not ledger.is_done(1)
    ledger.take_new(1, 2, track=False)
    assert ledger.all_done


def test_row_totals_are_estimated_until_every_partition_was_opened() -> None:
    ledger = PartitionLedger([0, 1, 2, 3])
    assert ledger.rows_estimate() is None
    ledger.open(0, 100)
    assert ledger.rows_estimate() == 400
    for p, rows in [(1, 50), (2, 50), (3, 0)]:
        ledger.open(p, rows)
    assert ledger.rows_estimate() == 200


def test_opening_a_partition_twice_or_a_foreign_one_is_refused() -> None:
    ledger = PartitionLedger([0, 2])
    ledger.open(0, 1)
    with pytest.raises(ValueError, match="twice"):
        ledger.open(0, 1)
    with pytest.raises(ValueError, match="not one of"):
        ledger.open(1, 1)
    with pytest.raises(ValueError, match="duplicate"):
        PartitionLedger([1, 1])
