"""Tests for the pure task/executor/worker assignment (storm_zmq.runtime.assignment)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storm_zmq.runtime.assignment import (
    ACKER,
    Assignment,
    ExecutorAssignment,
    WorkerSlot,
    _split,
    acker_executors,
    assign,
)


def slots(n: int) -> list[WorkerSlot]:
    return [WorkerSlot("127.0.0.1", 6700 + i) for i in range(n)]


def per_worker(a: Assignment, component: str) -> Counter[int]:
    return Counter(e.worker for e in a.executors if e.component == component)


# -- task ids ----------------------------------------------------------------------------


def test_task_ids_start_at_one_in_sorted_component_order_including_the_acker() -> None:
    a = assign("s", {"spout": (1, 2), "bolt": (2, 3), "Zed": (1, 1)}, slots(1), 2)
    # "Zed" < "__acker" < "bolt" < "spout" in code point order
    assert list(a.component_tasks) == ["Zed", ACKER, "bolt", "spout"]
    assert a.component_tasks == {
        "Zed": (1,),
        ACKER: (2, 3),
        "bolt": (4, 5, 6),
        "spout": (7, 8),
    }
    assert a.ackers == (2, 3)


def test_task_component_is_the_inverse_of_component_tasks() -> None:
    a = assign("s", {"spout": (1, 2), "bolt": (2, 3)}, slots(2), 1)
    assert a.task_component == {1: ACKER, 2: "bolt", 3: "bolt", 4: "bolt", 5: "spout", 6: "spout"}
    assert sorted(a.task_executor) == [1, 2, 3, 4, 5, 6]
    for task, index in a.task_executor.items():
        assert task in a.executors[index].tasks


def test_storm_id_and_workers_are_kept() -> None:
    ws = slots(3)
    a = assign("topo-1", {"x": (1, 1)}, ws, 0)
    assert a.storm_id == "topo-1"
    assert a.workers == tuple(ws)


def test_no_workers_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        assign("s", {"x": (1, 1)}, [], 1)


# -- executors ---------------------------------------------------------------------------


def test_tasks_split_contiguously_and_evenly_over_executors() -> None:
    a = assign("s", {"bolt": (3, 8)}, slots(1), 0)
    groups = [e.tasks for e in a.executors if e.component == "bolt"]
    assert groups == [(1, 2, 3), (4, 5, 6), (7, 8)]


def test_one_task_per_executor_when_num_tasks_equals_par() -> None:
    a = assign("s", {"bolt": (4, 4)}, slots(1), 0)
    assert [e.tasks for e in a.executors] == [(1,), (2,), (3,), (4,)]


@pytest.mark.parametrize(
    ("tasks", "executors", "expected"),
    [
        ((1, 2, 3, 4, 5), 2, [(1, 2, 3), (4, 5)]),
        ((1, 2, 3, 4, 5, 6), 3, [(1, 2), (3, 4), (5, 6)]),
        ((10, 11, 12, 13, 14, 15, 16), 4, [(10, 11), (12, 13), (14, 15), (16,)]),
        ((7,), 1, [(7,)]),
    ],
)
def test_split(tasks: tuple[int, ...], executors: int, expected: list[tuple[int, ...]]) -> None:
    assert _split(tasks, executors) == expected


def test_executor_indexes_are_positions() -> None:
    a = assign("s", {"a": (2, 4), "b": (3, 3)}, slots(2), 2)
    assert [e.index for e in a.executors] == list(range(len(a.executors)))


def test_executors_are_dealt_round_robin_in_sorted_order() -> None:
    a = assign("s", {"spout": (2, 2), "bolt": (2, 4)}, slots(2), 2)
    assert [(e.component, e.tasks, e.worker) for e in a.executors] == [
        (ACKER, (1,), 0),
        (ACKER, (2,), 1),
        ("bolt", (3, 4), 0),
        ("bolt", (5, 6), 1),
        ("spout", (7,), 0),
        ("spout", (8,), 1),
    ]


@pytest.mark.parametrize(
    ("parallelism", "num_ackers"),
    [
        ({"spout": (2, 2), "bolt": (2, 4)}, 0),  # two components, two workers
        ({"spout": (2, 2)}, 2),  # spout + one acker per worker
        ({"a": (4, 4), "b": (4, 4)}, 0),
    ],
)
def test_every_worker_gets_a_share_of_each_component(
    parallelism: dict[str, tuple[int, int]], num_ackers: int
) -> None:
    a = assign("s", parallelism, slots(2), num_ackers)
    components = set(parallelism) | ({ACKER} if num_ackers else set())
    for component in components:
        counts = per_worker(a, component)
        assert set(counts) == {0, 1}, (component, counts)
        assert max(counts.values()) - min(counts.values()) <= 1, (component, counts)


def test_worker_of_task_and_executors_of() -> None:
    a = assign("s", {"spout": (2, 2), "bolt": (2, 4)}, slots(2), 2)
    # sorted executors: 0 acker (1,), 1 acker (2,), 2 bolt (3, 4), 3 bolt (5, 6),
    # 4 spout (7,), 5 spout (8,); executor i runs in worker i % 2
    assert a.worker_of_task(1) == 0  # acker executor 0
    assert a.worker_of_task(2) == 1  # acker executor 1
    assert a.worker_of_task(3) == 0 and a.worker_of_task(4) == 0  # bolt executor 2
    assert a.worker_of_task(5) == 1 and a.worker_of_task(6) == 1  # bolt executor 3
    assert a.worker_of_task(7) == 0  # spout executor 4
    assert a.worker_of_task(8) == 1  # spout executor 5
    for e in a.executors:
        for task in e.tasks:
            assert a.worker_of_task(task) == e.index % 2
    assert [e.index for e in a.executors_of(0)] == [0, 2, 4]
    assert [e.index for e in a.executors_of(1)] == [1, 3, 5]
    assert a.executors_of(2) == []
    with pytest.raises(KeyError):
        a.worker_of_task(99)


def test_more_workers_than_executors_leaves_some_workers_empty() -> None:
    a = assign("s", {"x": (1, 1)}, slots(3), 0)
    assert [e.worker for e in a.executors] == [0]
    assert a.executors_of(1) == [] and a.executors_of(2) == []


# -- ackers ------------------------------------------------------------------------------


def test_acker_executors_from_config() -> None:
    assert acker_executors({"topology.acker.executors": None}, 3) == 3
    assert acker_executors({}, 4) == 4
    assert acker_executors({"topology.acker.executors": 0}, 3) == 0
    assert acker_executors({"topology.acker.executors": 5}, 2) == 5


def test_zero_ackers_means_no_acker_component() -> None:
    a = assign("s", {"spout": (1, 1), "bolt": (1, 1)}, slots(2), 0)
    assert a.ackers == ()
    assert ACKER not in a.component_tasks
    assert all(e.component != ACKER for e in a.executors)
    assert a.component_tasks == {"bolt": (1,), "spout": (2,)}


def test_default_ackers_one_per_worker() -> None:
    n = acker_executors({"topology.acker.executors": None}, 3)
    a = assign("s", {"spout": (3, 3)}, slots(3), n)
    assert len(a.ackers) == 3
    acker_execs = [e for e in a.executors if e.component == ACKER]
    assert [len(e.tasks) for e in acker_execs] == [1, 1, 1]


# -- serialization -----------------------------------------------------------------------


def test_to_dict_from_dict_round_trip_through_json() -> None:
    a = assign("s-1", {"spout": (2, 3), "bolt": (3, 7)}, slots(2), 2)
    data = json.loads(json.dumps(a.to_dict()))
    b = Assignment.from_dict(data)
    assert b == a
    assert b.task_component == a.task_component
    assert b.task_executor == a.task_executor
    assert b.ackers == a.ackers
    assert all(isinstance(e, ExecutorAssignment) and isinstance(e.tasks, tuple) for e in b.executors)
    assert all(isinstance(w, WorkerSlot) for w in b.workers)
    for task in a.task_component:
        assert b.worker_of_task(task) == a.worker_of_task(task)


# -- invariants (hypothesis) -------------------------------------------------------------

component_names = st.text(alphabet="abcxyzAB_-0", min_size=1, max_size=6).filter(
    lambda n: n != ACKER
)


@st.composite
def par_tasks(draw: st.DrawFn) -> tuple[int, int]:
    par = draw(st.integers(1, 6))
    return par, draw(st.integers(par, 12))


@settings(max_examples=150, deadline=None)
@given(
    parallelism=st.dictionaries(component_names, par_tasks(), min_size=1, max_size=5),
    num_workers=st.integers(1, 5),
    num_ackers=st.integers(0, 4),
)
def test_assignment_invariants(
    parallelism: dict[str, tuple[int, int]], num_workers: int, num_ackers: int
) -> None:
    a = assign("s", parallelism, slots(num_workers), num_ackers)
    expected = dict(parallelism)
    if num_ackers:
        expected[ACKER] = (num_ackers, num_ackers)
    assert set(a.component_tasks) == set(expected)

    # task ids: 1..N, contiguous per component, in sorted component-name order
    total = sum(t for _, t in expected.values())
    flat = [t for name in sorted(expected) for t in a.component_tasks[name]]
    assert flat == list(range(1, total + 1))

    # every task in exactly one executor, of its own component
    seen = Counter(t for e in a.executors for t in e.tasks)
    assert set(seen) == set(range(1, total + 1))
    assert all(n == 1 for n in seen.values())
    for e in a.executors:
        assert e.tasks, "every executor runs at least one task"
        assert all(a.task_component[t] == e.component for t in e.tasks)
        assert list(e.tasks) == list(range(e.tasks[0], e.tasks[-1] + 1)), "contiguous"
        assert 0 <= e.worker < num_workers

    # executors per component = par, sizes differ by at most one
    for name, (par, _) in expected.items():
        sizes = [len(e.tasks) for e in a.executors if e.component == name]
        assert len(sizes) == par
        assert max(sizes) - min(sizes) <= 1

    # executors in sorted (component, task range) order, dealt round-robin
    assert [(e.component, e.tasks[0]) for e in a.executors] == sorted(
        (e.component, e.tasks[0]) for e in a.executors
    )
    assert all(e.worker == e.index % num_workers for e in a.executors)

    # executors balanced over workers within one
    load = Counter({w: 0 for w in range(num_workers)})
    load.update(e.worker for e in a.executors)
    assert max(load.values()) - min(load.values()) <= 1

    # lookups agree with the executors
    for e in a.executors:
        for t in e.tasks:
            assert a.task_executor[t] == e.index
            assert a.worker_of_task(t) == e.worker
    assert sum(len(a.executors_of(w)) for w in range(num_workers)) == len(a.executors)

    assert Assignment.from_dict(a.to_dict()) == a


def test_no_more_workers_than_executors_as_in_storm() -> None:
    """A cluster audit: 3 workers for 2 executors and no ackers left one running
    nothing and holding a slot. With an acker per worker (the default) every worker
    has one."""
    from storm_zmq.runtime.assignment import workers_with_executors

    par = {"numbers": (1, 1), "sink": (1, 4)}
    assert workers_with_executors({"topology.acker.executors": 0}, par, 3) == 2
    assert workers_with_executors({"topology.acker.executors": 1}, par, 4) == 3
    assert workers_with_executors({"topology.acker.executors": None}, par, 8) == 8
    assert workers_with_executors({"topology.acker.executors": 0}, par, 1) == 1
