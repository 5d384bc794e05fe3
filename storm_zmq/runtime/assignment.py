"""Which task runs in which executor in which worker: pure, the way Storm does it.

Task ids are assigned per component in sorted component-name order, starting at 1
(Storm reserves -1; negative ids are control messages on the wire). Each
component's tasks are split into `par` contiguous executors, and executors, in sorted
order, are dealt round-robin over the workers, so that each component is spread
evenly (Storm's even scheduler). The acker `__acker` is a component like any
other. The result is plain data, so it can be shipped to worker processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ACKER = "__acker"


@dataclass(frozen=True)
class ExecutorAssignment:
    """One executor: a thread running `tasks` of `component` in worker `worker`."""

    index: int
    component: str
    tasks: tuple[int, ...]
    worker: int


@dataclass(frozen=True)
class WorkerSlot:
    host: str
    port: int


@dataclass(frozen=True)
class Assignment:
    storm_id: str
    workers: tuple[WorkerSlot, ...]
    executors: tuple[ExecutorAssignment, ...]
    component_tasks: dict[str, tuple[int, ...]]
    task_component: dict[int, str] = field(default_factory=dict)
    task_executor: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.task_component:
            for component, tasks in self.component_tasks.items():
                for task in tasks:
                    self.task_component[task] = component
        if not self.task_executor:
            for executor in self.executors:
                for task in executor.tasks:
                    self.task_executor[task] = executor.index

    @property
    def ackers(self) -> tuple[int, ...]:
        """The acker tasks; empty when acking is off."""
        return self.component_tasks.get(ACKER, ())

    def worker_of_task(self, task: int) -> int:
        return self.executors[self.task_executor[task]].worker

    def executors_of(self, worker: int) -> list[ExecutorAssignment]:
        return [e for e in self.executors if e.worker == worker]

    def to_dict(self) -> dict[str, Any]:
        return {
            "storm_id": self.storm_id,
            "workers": [[w.host, w.port] for w in self.workers],
            "executors": [[e.index, e.component, list(e.tasks), e.worker] for e in self.executors],
            "component_tasks": {c: list(t) for c, t in self.component_tasks.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Assignment:
        return cls(
            storm_id=data["storm_id"],
            workers=tuple(WorkerSlot(h, p) for h, p in data["workers"]),
            executors=tuple(
                ExecutorAssignment(i, c, tuple(t), w) for i, c, t, w in data["executors"]
            ),
            component_tasks={c: tuple(t) for c, t in data["component_tasks"].items()},
        )


def acker_executors(conf: dict[str, Any], num_workers: int) -> int:
    """`topology.acker.executors`: null means one per worker, 0 turns acking off."""
    configured = conf.get("topology.acker.executors")
    return num_workers if configured is None else int(configured)


def workers_with_executors(conf: dict[str, Any], parallelism: dict[str, tuple[int, int]],
                           num_workers: int) -> int:
    """How many of `num_workers` would get an executor: a worker beyond the
    topology's executors (ackers fixed by `topology.acker.executors`) would run
    nothing and hold a slot, so Storm uses no more workers than executors."""
    executors = sum(par for par, _tasks in parallelism.values())
    return max(1, min(num_workers, executors + acker_executors(conf, num_workers)))


def assign(
    storm_id: str,
    parallelism: dict[str, tuple[int, int]],
    workers: list[WorkerSlot],
    num_ackers: int,
) -> Assignment:
    """Assign tasks and executors. `parallelism` maps component name to
    (executors, tasks); the acker is added with `num_ackers` of each."""
    if not workers:
        raise ValueError("a topology needs at least one worker")
    components = dict(parallelism)
    if num_ackers > 0:
        components[ACKER] = (num_ackers, num_ackers)
    component_tasks: dict[str, tuple[int, ...]] = {}
    next_task = 1
    for name in sorted(components):
        _, num_tasks = components[name]
        component_tasks[name] = tuple(range(next_task, next_task + num_tasks))
        next_task += num_tasks

    # Executors in sorted order (component, then task range), dealt round-robin:
    # consecutive executors of a component land on different workers, so each
    # component is spread as evenly as the worker count allows (Storm's even
    # scheduler).
    ordered = [
        (name, group) for name in sorted(components)
        for group in _split(component_tasks[name], components[name][0])
    ]
    executors = tuple(
        ExecutorAssignment(index, name, tasks, index % len(workers))
        for index, (name, tasks) in enumerate(ordered)
    )
    return Assignment(storm_id, tuple(workers), executors, component_tasks)


def _split(tasks: tuple[int, ...], executors: int) -> list[tuple[int, ...]]:
    """Contiguous, as even as possible: Storm's partition of tasks over executors."""
    size, extra = divmod(len(tasks), executors)
    groups = []
    start = 0
    for index in range(executors):
        end = start + size + (1 if index < extra else 0)
        groups.append(tasks[start:end])
        start = end
    return groups
