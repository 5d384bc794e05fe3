"""`storm-zmq run` end to end: real worker processes, real sockets, real transports.

Each test runs a topology from tests/runtime/project (streamparse layout) through the
command line, as a user would, and checks what its components wrote in cleanup().
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from storm_zmq.runtime.local import LOWEST_FREE_PORT, check_ports, ephemeral_port_start, free_ports
from tests.messaging.conftest import free_port

PROJECT = Path(__file__).parent / "project"
pytestmark = pytest.mark.slow


def run(
    topology: str, tmp_path: Path, *options: str, workers: int = 1, timeout: float = 120,
    ports: list[int] | None = None,
) -> subprocess.CompletedProcess[str]:
    ports = ports or [free_port() for _ in range(workers)]
    command = [
        sys.executable, "-m", "storm_zmq.cli.main", "run", str(PROJECT / "topologies" / topology),
        "-w", str(workers), "-q",
        "-o", f"supervisor.slots.ports={ports}",
        "-o", f"test.output_dir={tmp_path}",
        *options,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=tmp_path)


def outputs(tmp_path: Path, prefix: str) -> dict[str, object]:
    return {p.name: json.loads(p.read_text()) for p in sorted(tmp_path.glob(f"{prefix}-*.json"))}


def sentences() -> list[str]:
    sys.path.insert(0, str(PROJECT / "src"))
    try:
        from testparts.components import SENTENCES
    finally:
        sys.path.remove(str(PROJECT / "src"))
    return SENTENCES


def expected_counts(count: int) -> Counter[str]:
    """The word counts of the word count's first `count` sentences (NumberSpout)."""
    expected: Counter[str] = Counter()
    texts = sentences()
    for i in range(count):
        expected.update(texts[i % len(texts)].split())
    return expected


#: A thread for each executor (worker.shared.executor.thread off; the default is one
#: thread for all of a worker's executors).
THREADS = ("-o", "worker.shared.executor.thread=false")


@pytest.mark.parametrize(("transport", "options"), [("zmq", ()), ("tcp", ()), ("zmq", THREADS)],
                         ids=["zmq", "tcp", "zmq-thread-each"])
def test_word_counts_are_exact_across_two_workers(
    tmp_path: Path, transport: str, options: tuple[str, ...]
) -> None:
    count = 3000
    result = run("wordcount.py", tmp_path, "--transport", transport, "-o", f"test.count={count}",
                 *options, workers=2)
    assert result.returncode == 0, result.stderr
    assert "every spout is exhausted" in result.stdout
    counted: Counter[str] = Counter()
    per_task = outputs(tmp_path, "count")
    assert len(per_task) == 3, "every count task ran cleanup()"
    for task_counts in per_task.values():
        assert not set(task_counts) & set(counted), "a word was counted by two tasks"
        counted.update(task_counts)
    assert counted == expected_counts(count)
    spouts = outputs(tmp_path, "spout")
    assert sorted(i for s in spouts.values() for i in s["acked"]) == list(range(count))


@pytest.mark.parametrize("options", [(), THREADS], ids=["shared-thread", "thread-each"])
def test_tuples_failed_or_timed_out_are_replayed_until_all_arrive(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    count = 400
    result = run(
        "reliable.py", tmp_path, "-o", f"test.count={count}",
        "-o", "topology.message.timeout.secs=2", "-o", "topology.max.spout.pending=50",
        *options, workers=2,
    )
    assert result.returncode == 0, result.stderr
    spouts = outputs(tmp_path, "spout")
    assert sorted(i for s in spouts.values() for i in s["acked"]) == list(range(count))
    failures = sum(s["failures"] for s in spouts.values())
    flaky = {i for i in range(count) if i % 7 == 0 or i % 11 == 0}
    assert failures >= len(flaky), "each flaky id failed (or timed out) at least once"
    assert all(s["max_outstanding"] <= 50 for s in spouts.values()), "max.spout.pending held"
    delivered = Counter(i for seen in outputs(tmp_path, "sink").values() for i in seen)
    assert set(delivered) == set(range(count)), "every id reached the sink"
    duplicates = sum(n - 1 for n in delivered.values())
    assert duplicates <= failures  # at-least-once: duplicates only from replays


def test_components_made_as_streamparse_makes_them_with_attributes_of_their_own(tmp_path: Path) -> None:
    """An ``__init__(self)`` calling ``super().__init__()``, as streamparse's
    examples write it (streamparse makes a component with ``cls()``), and a
    ``_collector`` of the component's own, a name pystorm leaves free: the run
    delivers and acks every id."""
    count = 300
    result = run("plain_init.py", tmp_path, "-o", f"test.count={count}", workers=2)
    assert result.returncode == 0, result.stderr
    spouts = outputs(tmp_path, "spout")
    assert sorted(i for s in spouts.values() for i in s["acked"]) == list(range(count))
    assert sum(s["acked"] for s in outputs(tmp_path, "plain-spout").values()) == count
    assert sorted(i for seen in outputs(tmp_path, "plain-bolt").values() for i in seen) == list(range(count))
    assert sorted(i for seen in outputs(tmp_path, "sink").values() for i in seen) == list(range(count))


@pytest.mark.parametrize("options", [(), THREADS], ids=["shared-thread", "thread-each"])
def test_an_idle_spout_is_called_again_after_its_sleep_spout_wait(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    """topology.sleep.spout.wait.strategy.time.ms, Storm's sleep spout wait: a
    spout whose next_tuple() emitted nothing is called again that long after, the
    component's own value over the topology's (1 ms)."""
    result = run("idle_spouts.py", tmp_path, "-t", "2", *options)
    assert result.returncode == 0, result.stderr
    (patient,) = outputs(tmp_path, "idle-patient").values()
    (eager,) = outputs(tmp_path, "idle-eager").values()
    span = patient["last"] - patient["first"]
    assert span > 1 and patient["calls"] <= span / 0.2 + 1, patient
    assert eager["calls"] > 4 * patient["calls"], (eager, patient)


def test_a_spout_with_a_long_spout_wait_in_a_thread_of_its_own_stops_at_once(tmp_path: Path) -> None:
    """A stop is an event, not a put into the spout's queue: a spout that waits 8 s
    between calls still sees it within its 50 ms steps (it took the 8 s, past the
    worker's grace for it)."""
    result = run("idle_spouts.py", tmp_path, "-t", "1", *THREADS,
                 "-o", "topology.sleep.spout.wait.strategy.time.ms=8000")
    assert result.returncode == 0, result.stderr
    stopped = float(re.search(r"stopped after ([\d.]+) s", result.stdout).group(1))  # type: ignore[union-attr]
    assert stopped < 5, result.stdout
    (eager,) = outputs(tmp_path, "idle-eager").values()
    assert eager["calls"] == 1, "called once in the run: its next call was 8 s away"


def test_groupings_ticks_direct_all_and_global(tmp_path: Path) -> None:
    count = 60
    result = run("groupings.py", tmp_path, "-o", f"test.count={count}", workers=2)
    assert result.returncode == 0, result.stderr
    batches = outputs(tmp_path, "batches")
    assert sum(batches.values()) >= 1, "the BatchingBolt processed batches on tick tuples"
    sinks = outputs(tmp_path, "sink")
    by_component: dict[int, list[list[int]]] = {}
    for seen in sinks.values():
        for task, value in seen:
            by_component.setdefault(task, []).append(value)
    # all: each of the 3 'everyone' tasks got every id; global: one task got all
    full = [task for task, values in by_component.items() if sorted(values) == list(range(count))]
    assert len(full) >= 4, f"ALL to 3 tasks and GLOBAL to 1: {sorted(by_component)}"
    # direct: ids split over the 3 'chosen' tasks by the spout's choice (i % 3)
    partial = {task: sorted(v) for task, v in by_component.items() if len(v) < count}
    assert sorted(len(v) for v in partial.values()) == [20, 20, 20]
    for offset, (_task, values) in enumerate(sorted(partial.items())):
        assert all(v % 3 == offset for v in values)


@pytest.mark.parametrize("transport", ["zmq", "tcp"])
def test_a_task_gets_another_workers_tuples_in_emit_order_across_streams(
    tmp_path: Path, transport: str
) -> None:
    """Remote tuples travel in batches of one stream each; the batches keep the
    order in which one task emitted to another, whatever the stream, as a local
    delivery does."""
    count = 3000
    result = run("order.py", tmp_path, "--transport", transport, "-o", f"test.count={count}",
                 "-o", "topology.transfer.batch.size=64", workers=2)
    assert result.returncode == 0, result.stderr
    relays = outputs(tmp_path, "relay")
    (sink,) = outputs(tmp_path, "order").values()
    assert any(r["port"] != sink["port"] for r in relays.values()), "a relay in the other worker"
    for name, relay in relays.items():
        task = name[len("relay-"):-len(".json")]
        assert sink["seen"][task] == relay["sent"]
    assert sorted(i for seen in sink["seen"].values() for _, i in seen) == list(range(count))


@pytest.mark.parametrize(("transport", "topology"), [
    ("zmq", "value_types.py"), ("tcp", "value_types.py"), ("zmq", "value_types_per_component.py")])
def test_dates_decimals_uuids_and_registered_types_cross_workers_as_themselves(
    tmp_path: Path, transport: str, topology: str
) -> None:
    """A value of a type a tuple carries beyond msgpack's own, built in or the
    topology's own (topology.kryo.register: an Enum, a frozen dataclass, a class
    with a serializer), arrives in another worker equal and of its type, a datetime
    with its time zone and fold; a fields grouping on a date and an Enum sends each
    key to one task, whichever worker emitted it. The types may be registered by the
    components that emit them (value_types_per_component.py), as in Storm."""
    count = 300
    result = run(topology, tmp_path, "--transport", transport, "-o", f"test.count={count}",
                 workers=2)
    assert result.returncode == 0, result.stderr
    assert "topology.kryo.register" not in result.stderr, "no warning of a component's registrations"
    sys.path.insert(0, str(PROJECT / "src"))
    try:
        from testparts.components import typed_values
    finally:
        sys.path.remove(str(PROJECT / "src"))
    sinks = outputs(tmp_path, "typed")
    assert len({sink["port"] for sink in sinks.values()}) == 2, "a sink task in each worker"
    seen = [(int(i), got) for sink in sinks.values() for i, got in sink["seen"].items()]
    assert sorted(i for i, _ in seen) == list(range(count))
    for i, (text, types) in seen:
        expected = typed_values(i)
        assert text == repr(expected)
        assert types == [type(v).__name__ for v in expected]
    keys_per_sink = [{tuple(typed_values(int(i))[1:3]) for i in sink["seen"]} for sink in sinks.values()]
    assert all(keys_per_sink) and not set.intersection(*keys_per_sink), keys_per_sink


@pytest.mark.parametrize("options", [(), THREADS], ids=["shared-thread", "thread-each"])
def test_a_component_that_raises_stops_the_run_with_its_traceback(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    result = run("crash.py", tmp_path, "-o", "test.count=100", *options)
    assert result.returncode == 1
    assert "component 'crash' task" in result.stderr
    assert "ZeroDivisionError: the bolt divided by zero on purpose" in result.stderr
    assert "Traceback" in result.stderr and "components.py" in result.stderr
    # once: the worker prints it, the runner's closing line refers to it
    assert result.stderr.count("ZeroDivisionError: the bolt divided by zero on purpose") == 1
    assert "(traceback above)" in result.stderr
    # the summary counts what ran before the failure, though no report was due yet
    (crash,) = [line.split() for line in result.stdout.splitlines() if line.startswith("  crash ")]
    assert int(crash[2]) == 5, result.stdout  # executed: ids 0-4, then 5 raised


def test_a_bolt_with_exit_on_exception_off_reports_fails_and_goes_on(tmp_path: Path) -> None:
    """pystorm's exit_on_exception = False: every exception in process() is reported
    with its traceback, its input failed (and replayed by the spout), and the run
    goes on to the end."""
    count = 50
    # Storm's error throttle: 5 written a task per interval (one interval for the
    # whole run here), the rest counted and said once
    result = run("carry_on.py", tmp_path, "-o", f"test.count={count}",
                 "-o", "topology.error.throttle.interval.secs=3600", timeout=30)
    assert result.returncode == 0, result.stderr
    assert "every spout is exhausted" in result.stdout
    raised = [i for i in range(count) if i % 7 == 0]
    for i in raised[:5]:  # in the order the spout emitted them
        assert f"ValueError: id {i} raised on purpose" in result.stderr
    for i in raised[5:]:
        assert f"ValueError: id {i} raised on purpose" not in result.stderr
    assert result.stderr.count("Traceback") == 5
    assert result.stderr.count("reported an error on tuple") == 5
    assert result.stderr.count(": more than 5 errors in 3600 s; the rest of this interval are "
                               "counted, not logged") == 1
    (spout,) = outputs(tmp_path, "spout").values()
    assert spout["acked"] == list(range(count))
    assert spout["failures"] == len(raised), "failed by the bolt, not timed out"
    (sink,) = outputs(tmp_path, "sink").values()
    assert sorted(sink) == list(range(count))
    (row,) = [line.split() for line in result.stdout.splitlines() if line.startswith("  carry_on ")]
    executed, acked, failed = (int(n) for n in row[2:5])
    assert (executed, acked, failed) == (count + len(raised), count, len(raised)), result.stdout
    assert f"  errors reported: carry_on {len(raised)} (tracebacks in the log above, up to " \
        "topology.max.error.report.per.interval a task per interval)" in result.stdout.splitlines()


def test_a_cleanup_that_raises_fails_the_run_with_its_traceback(tmp_path: Path) -> None:
    result = run("cleanup.py", tmp_path, "-o", "test.count=50", "-o", "test.cleanup=raise")
    assert "every spout is exhausted" in result.stdout
    assert result.returncode == 1, result.stderr
    assert "component 'cleaner' task" in result.stderr
    assert result.stderr.count("RuntimeError: cleanup failed on purpose") == 1, result.stderr


@pytest.mark.parametrize(("workers", "options"), [(1, ()), (2, ()), (1, THREADS)],
                         ids=["1-worker", "2-workers", "thread-each"])
def test_emits_and_acks_from_a_components_own_threads_all_arrive(
        tmp_path: Path, workers: int, options: tuple[str, ...]) -> None:
    """pystorm let a component emit and ack from threads of its own. An audit: such
    an emit made while the executor's thread flushed went into a buffer already
    handed on, and 2 of 20,000 went missing in every run (an ack too: the tree
    timed out). A spout's thread emits every id tracked; a bolt's thread emits and
    acks each input while the bolt emits a copy inline, and adds values of its own."""
    count = 20_000
    # small output batches: a flush every 16 emits, so the threads race it often
    result = run("thread_emits.py", tmp_path, "-o", f"test.count={count}",
                 "-o", "topology.transfer.batch.size=16", *options, workers=workers)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "every spout is exhausted" in result.stdout  # each id acked
    assert json.loads((tmp_path / "threadspout.json").read_text()) == {"acked": count, "failed": 0}
    seen: dict[str, Counter[int]] = {"default": Counter(), "inline": Counter(), "extra": Counter()}
    for sink in outputs(tmp_path, "streamcount").values():
        for stream, counts in sink.items():  # type: ignore[union-attr]
            seen[stream].update({int(i): n for i, n in counts.items()})
    for stream, counts in seen.items():
        assert counts == Counter(range(count)), (stream, len(counts), sum(counts.values()))


def test_emits_in_cleanup_are_flushed_with_a_warning(tmp_path: Path) -> None:
    result = run("cleanup.py", tmp_path, "-o", "test.count=50", "-o", "test.cleanup=emit")
    assert result.returncode == 0, result.stderr
    assert "component 'cleaner' task" in result.stderr
    assert "emitted 1 tuple(s) in cleanup()" in result.stderr
    # a component's print() is a record of its worker, on stderr, not among the
    # run's progress and summary on stdout, and names the executor (component:task)
    # that printed it
    assert re.search(r" worker-0 INFO STDOUT \[cleaner:\d+\]: cleaner counted 50 in Cleanup\n",
                     result.stderr), result.stderr
    assert "cleaner counted" not in result.stdout, result.stdout
    # and what it writes to stderr is a record too, one for its lines
    assert re.search(r" worker-0 WARNING STDERR \[cleaner:\d+\]: cleaner's stderr:\n  50 tuples\n",
                     result.stderr), result.stderr


def test_emits_of_a_component_without_outputs_are_dropped_with_one_warning_a_task(
    tmp_path: Path,
) -> None:
    # streamparse's kafka-jvm example: a terminal bolt that emits without declaring
    # outputs ran on Storm 1.x; it must not stop the topology here either.
    result = run("undeclared.py", tmp_path, "-o", "test.count=200", workers=2)
    assert result.returncode == 0, result.stderr
    assert "every spout is exhausted" in result.stdout
    spouts = outputs(tmp_path, "spout")
    assert sorted(i for s in spouts.values() for i in s["acked"]) == list(range(200)), spouts
    seen = outputs(tmp_path, "terminal")
    assert sorted(i for s in seen.values() for i in s) == list(range(200)), seen
    warnings = re.findall(r"component 'terminal' task (\d+) emitted on stream 'default', but it "
                          r"declares no streams \(no `outputs`\), so nothing can subscribe: "
                          r"dropped", result.stderr)
    assert sorted(warnings) == sorted({w for w in warnings}), result.stderr  # one a task
    assert len(warnings) == 2, result.stderr


def test_a_spout_waiting_in_next_tuple_holds_up_the_others_of_its_worker_a_second_at_most(
    tmp_path: Path,
) -> None:
    # A spout that waits seconds for its first client stopped every other component
    # of its worker (one shared executor thread) for 10 s: now they go on after 1 s.
    result = run("waiting.py", tmp_path, "-o", "test.count=50", "-o", "test.block_secs=5",
                 "-o", "test.rate=100")
    assert result.returncode == 0, result.stderr
    assert "every spout is exhausted" in result.stdout
    returned_at = outputs(tmp_path, "waiting")["waiting-spout.json"]["returned_at"]
    (arrived,) = outputs(tmp_path, "clocked").values()
    assert sorted(map(int, arrived)) == list(range(50))
    early = [i for i, when in arrived.items() if when < returned_at]
    assert len(early) >= 20, (len(early), result.stderr)  # 0.5 s of 100 a second
    # (a second after the call began, or later on a busy machine: what it held the
    # others up for is the early count's concern)
    assert re.search(r"component 'waiting' \(tasks \d+\) has held its worker's shared executor "
                     r"thread for \d+\.\d s in its own code, at .*components\.py:\d+ in "
                     r"next_tuple: the other components \(.*\) go on in a new one",
                     result.stderr), result.stderr


def test_the_drain_waits_for_the_tuple_a_bolt_is_running(tmp_path: Path) -> None:
    # Acking off, nothing is pending: while the relay runs its last tuple, its queue
    # is empty and only the tuple in hand says that more is to come. It counts as
    # queued until the relay's output is flushed, so no round of reports (one per
    # 0.1 s while draining) sees the run drained before the sink has every id.
    result = run("slow_relay.py", tmp_path, "-o", "test.count=4", "-o", "test.sleep_secs=0.4",
                 workers=2)
    assert result.returncode == 0, result.stderr
    assert "every spout is exhausted" in result.stdout
    assert "dropped" not in result.stderr and "warning" not in result.stderr.lower(), result.stderr
    sinks = outputs(tmp_path, "sink")
    assert sorted(i for seen in sinks.values() for i in seen) == [0, 1, 2, 3], (sinks, result.stdout, result.stderr)


@pytest.mark.parametrize("options", [(), THREADS], ids=["shared-thread", "thread-each"])
def test_a_slow_bolts_output_flows_as_it_runs_not_after_its_whole_input_batch(
        tmp_path: Path, options: tuple[str, ...]) -> None:
    """An audit: an executor in a thread of its own (a slow bolt moves to one)
    ran all its queued input before it flushed: 20 ids of 0.1 s each reached the
    sink at one moment, 2 s late (100 of 0.4 s: past the message timeout, acked
    work failed). It now flushes after every turn of about 5 ms, as a shared
    thread's step does."""
    result = run("slow_relay_clocked.py", tmp_path, "-o", "test.count=20",
                 "-o", "test.sleep_secs=0.1", *options)
    assert result.returncode == 0, result.stderr
    (arrived,) = outputs(tmp_path, "clocked").values()
    assert sorted(map(int, arrived)) == list(range(20))  # type: ignore[call-overload]
    times = sorted(arrived.values())  # type: ignore[union-attr]
    assert times[-1] - times[0] >= 1.0, times  # 1.9 s of relaying, as it went


@pytest.mark.parametrize("stop", ["-t", "SIGTERM"])
def test_a_long_drain_says_what_it_waits_for_and_ctrl_c_ends_it(tmp_path: Path, stop: str) -> None:
    # After a stop by a signal (SIGTERM, as `timeout` sends; Ctrl-C the same), a
    # Ctrl-C in the drain ended everything: no summary, and no cleanup() ran.
    import os
    import signal

    command = [
        sys.executable, "-m", "storm_zmq.cli.main", "run", str(PROJECT / "topologies" / "cleanup.py"),
        *(["-t", "1", "-q"] if stop == "-t" else []), "-o", f"supervisor.slots.ports={[free_port()]}",
        "-o", f"test.output_dir={tmp_path}", "-o", "test.count=20", "-o", "test.hold=true",
        "-o", "topology.message.timeout.secs=300",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, cwd=tmp_path)
    assert process.stdout is not None and process.stderr is not None
    if stop != "-t":
        for line in process.stdout:  # the first progress line: the topology is running
            if line.startswith("["):
                break
        # `timeout` and service managers signal the whole group: the workers too
        os.killpg(process.pid, signal.SIGTERM)
    seen = []
    for line in process.stderr:  # no un-acked tree completes: the drain waits
        seen.append(line)
        if line.startswith("draining:"):
            break
    assert seen and seen[-1].startswith("draining: 20 tuple tree(s) pending"), seen
    assert "waiting up to 300 s" in seen[-1]
    # which component: the spout's trees, and a bolt holding their tuples
    assert "(trees pending at numbers 20; none queued: a bolt holds their tuples" in seen[-1], seen
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "stopping with 20 tuple tree(s) pending" in stderr
    assert ("ran 1 s" if stop == "-t" else "interrupted") in stdout
    assert outputs(tmp_path, "sink"), "cleanup() ran"


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_while_the_workers_run_cleanup_waits_for_it_and_a_second_stops_at_once(
    tmp_path: Path, presses: int,
) -> None:
    # A Ctrl-C (or a service manager's SIGTERM) while the workers ran cleanup() after
    # -t or the spouts' end ended the run in silence with exit 130, and skipped the
    # cleanups not yet done. Here the 20 numbers end before -t.
    import os
    import signal

    command = [
        sys.executable, "-m", "storm_zmq.cli.main", "run", str(PROJECT / "topologies" / "cleanup.py"),
        "-t", "30", "-q", "-o", f"supervisor.slots.ports={[free_port()]}",
        "-o", f"test.output_dir={tmp_path}", "-o", "test.count=20",
        "-o", "test.cleanup=slow", "-o", "test.cleanup_secs=3",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, cwd=tmp_path)
    assert process.stdout is not None and process.stderr is not None
    seen = []
    for line in process.stderr:
        seen.append(line)
        if "cleaner's cleanup started" in line:
            break
    assert "cleaner's cleanup started" in seen[-1], seen
    os.killpg(process.pid, signal.SIGINT)
    if presses == 2:
        for line in process.stderr:
            seen.append(line)
            if "Ctrl-C again to stop them at once" in line:
                break
        assert "the workers are running cleanup()" in seen[-1], seen
        os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    stderr = "".join(seen) + stderr
    if presses == 1:
        assert process.returncode == 0, stderr
        assert "the workers are running cleanup() and stopping" in stderr
        assert "stopped after" in stdout and "every spout is exhausted" in stdout, stdout
        assert outputs(tmp_path, "cleaner"), "the slow cleanup() finished"
        assert outputs(tmp_path, "sink"), "every cleanup() ran"
    else:
        assert process.returncode == 130, stderr
        assert "stopped at once: killed worker 0 (components cleaner, numbers, sink), not " \
               "stopped yet, so cleanup() may not have run there" in stderr, stderr
        assert "every spout is exhausted, then stopped at once" in stdout, stdout
        assert not outputs(tmp_path, "cleaner"), "the slow cleanup() was cut short"


def test_two_signals_at_once_end_the_drain_and_every_cleanup_still_runs(tmp_path: Path) -> None:
    # A double tap (or a SIGTERM and a Ctrl-C together) reached the runner before its
    # drain began: the second stopped the workers at once, and no cleanup() ran,
    # although the first had said a second would only end the wait for the tuples.
    import os
    import signal

    command = [
        sys.executable, "-m", "storm_zmq.cli.main", "run", str(PROJECT / "topologies" / "cleanup.py"),
        "-o", f"supervisor.slots.ports={[free_port()]}", "-o", f"test.output_dir={tmp_path}",
        "-o", "test.count=20", "-o", "test.hold=true", "-o", "topology.message.timeout.secs=300",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, cwd=tmp_path)
    assert process.stdout is not None
    for line in process.stdout:  # the first progress line: the topology is running
        if line.startswith("["):
            break
    os.killpg(process.pid, signal.SIGTERM)  # two different signals: neither is merged away
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "not waiting for the tuples in flight" in stderr, stderr
    assert "stopped at once" not in stderr, stderr
    assert outputs(tmp_path, "sink"), "cleanup() ran"


def test_ctrl_c_twice_while_a_failed_run_stops_keeps_its_exit_code_and_error(tmp_path: Path) -> None:
    # Stopping at once after a failure exited 130, as if only interrupted, and the
    # first Ctrl-C promised to stop "waiting for the tuples in flight": there is no
    # drain after a failure.
    import os
    import signal

    command = [
        sys.executable, "-m", "storm_zmq.cli.main", "run",
        str(PROJECT / "topologies" / "crash_beside_cleanup.py"), "-w", "2", "-t", "30", "-q",
        "-o", f"supervisor.slots.ports={[free_port(), free_port()]}",
        "-o", f"test.output_dir={tmp_path}", "-o", "test.count=20",
        "-o", "test.cleanup=slow", "-o", "test.cleanup_secs=30",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, cwd=tmp_path)
    assert process.stdout is not None and process.stderr is not None
    seen = []
    for line in process.stderr:  # the survivor's cleaner, stopping after the crash
        seen.append(line)
        if "cleaner's cleanup started" in line:
            break
    os.killpg(process.pid, signal.SIGINT)
    for line in process.stderr:
        seen.append(line)
        if "Ctrl-C again to stop them at once" in line:
            break
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    stderr = "".join(seen) + stderr
    assert process.returncode == 1, stderr
    assert stderr.count("error: worker ") == 1 and "component 'crash' task" in stderr, stderr
    assert "stopping (Ctrl-C again to stop waiting" not in stderr, stderr
    assert "stopped at once: killed worker" in stderr, stderr
    assert "a component failed, then stopped at once" in stdout, stdout


def test_a_cleanup_that_hangs_is_named_with_the_cleanups_it_kept_from_running(tmp_path: Path) -> None:
    # The worker gives its executors 12 s to stop. Said before: "cleanup() has not run
    # for the components there (blocked in process(), next_tuple() or cleanup()?)",
    # listing every component of the shared thread, those whose cleanup() had run too.
    result = run("cleanup.py", tmp_path, "-t", "30", "-o", "test.count=20",
                 "-o", "test.cleanup=slow", "-o", "test.cleanup_secs=60")
    assert result.returncode == 1, result.stderr
    assert "did not stop within 12 s of being told to (in the cleanup() of 'cleaner' task " \
           in result.stderr, result.stderr
    assert "cleanup() has not finished for 'cleaner' task" in result.stderr, result.stderr
    said = result.stderr.split("cleanup() has not finished for ", 1)[1].splitlines()[0]
    ran = outputs(tmp_path, "sink")
    assert ("'sink' task" in said) != bool(ran), (said, ran)  # named if and only if it did not run


def test_a_batching_bolt_without_ticks_is_warned_about(tmp_path: Path) -> None:
    result = run("batching_without_ticks.py", tmp_path, "-o", "test.count=10",
                 "-o", "topology.acker.executors=0")
    assert result.returncode == 0, result.stderr
    assert ("component 'batcher' is a BatchingBolt, which processes its batches on tick "
            "tuples, but topology.tick.tuple.freq.secs is not set") in result.stderr


def test_a_stop_processes_the_batches_of_a_batching_bolt_at_once(tmp_path: Path) -> None:
    # Bug (a new user's audit): with no tick to come, the batch held every tree open,
    # the stop's drain waited the message timeout out (a 4 s run took 34), and the
    # tuples were never processed; deactivated, a BatchingBolt processes its batches
    result = run("batching_without_ticks.py", tmp_path, "-o", "test.count=10", "-t", "2")
    assert result.returncode == 0, result.stderr
    (batches,) = outputs(tmp_path, "batches").values()
    assert batches == 2  # one per parity
    numbers = next(line.split() for line in result.stdout.splitlines()
                   if line.split()[:1] == ["numbers"])
    assert numbers[1:5] == ["10", "0", "10", "0"], result.stdout  # emitted, executed, acked, failed


def test_a_stop_processes_batches_of_what_reaches_a_batching_bolt_after_it(tmp_path: Path) -> None:
    # A review: processed once at the deactivation, the batches of tuples that were
    # still in a slow bolt before it waited for a tick again, and the drain for them
    result = run("batching_behind_a_relay.py", tmp_path, "-o", "test.count=40",
                 "-o", "test.sleep_secs=0.05", "-o", "topology.max.spout.pending=40", "-t", "1")
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split()[1:5] for line in result.stdout.splitlines()
            if line.split()[:1] in (["numbers"], ["batcher"])}
    assert rows["numbers"] == ["40", "0", "40", "0"], result.stdout  # emitted, executed, acked, failed
    assert rows["batcher"][1] == "40", result.stdout
    (batches,) = outputs(tmp_path, "batches").values()
    assert batches >= 2  # processed as its input came, not once


def test_an_unserializable_value_names_component_stream_and_type(tmp_path: Path) -> None:
    result = run("unserializable.py", tmp_path, workers=2)
    assert result.returncode == 1
    assert "component 'values', stream 'default': value 0 of the tuple is a builtins.set" in result.stderr


@pytest.mark.parametrize("option", ["topology.copy.emitted.values=true",
                                    "topology.testing.always.try.serialize=true"])
def test_an_unserializable_value_fails_at_the_emit_inside_one_worker_too(
        tmp_path: Path, option: str) -> None:
    # One worker delivers tuples as objects: the copy at the emit (the default), or
    # Storm's testing key, makes the mistake fail as it would between workers, at the
    # line that emitted
    result = run("unserializable.py", tmp_path, "-o", option, workers=1)
    assert result.returncode == 1
    assert "component 'values', stream 'default': value 0 of the tuple is a builtins.set" in result.stderr
    assert "self.emit(" in result.stderr  # the emitting line, in the traceback


@pytest.mark.parametrize("workers", [1, 2])
def test_a_list_emitted_then_cleared_arrives_as_it_was_at_the_emit(
        tmp_path: Path, workers: int) -> None:
    # Bug (a new user's audit): a bolt that emits its buffer, then clears it for
    # reuse, as pystorm bolts could, delivered empty lists in one worker (the object
    # itself) and in two (serialized at the flush, after the clear): 0 and 1,500 of
    # the ids 0..99 summed to 4,950, in silence
    result = run("buffers.py", tmp_path, "-o", "test.count=100", workers=workers)
    assert result.returncode == 0, result.stderr
    ids = [i for got in outputs(tmp_path, "lists").values() for i in got]
    assert sorted(ids) == list(range(100))


def test_always_try_serialize_gives_each_consumer_in_one_worker_its_own_copy(
    tmp_path: Path,
) -> None:
    # In one worker, tuples are handed over as objects: a consumer that changes its
    # input in place (as streamparse bolts could) changed a sibling's, and a spout's
    # change after its emit reached both. With try.serialize each gets what another
    # worker would decode.
    result = run("mutating.py", tmp_path, "-o", "test.count=300",
                 "-o", "topology.testing.always.try.serialize=true")
    assert result.returncode == 0, result.stderr
    assert "every spout is exhausted" in result.stdout
    (audit,) = outputs(tmp_path, "audit").values()
    assert audit == {"seen": 300, "changed": [], "changed_count": 0, "pair_types": ["list"]}

    # by default the values are copied at the emit (topology.copy.emitted.values):
    # the spout's change after its emit reaches nobody; the two consumers share the copy
    plain = run("mutating.py", tmp_path, "-o", "test.count=300")
    assert plain.returncode == 0, plain.stderr
    (audit,) = outputs(tmp_path, "audit").values()
    assert audit["seen"] == 300 and audit["pair_types"] == ["list"], audit
    assert not any("changed_after_emit" in doc for doc in audit["changed"]), audit

    # what the copy guards against: without it, the spout's change reaches every consumer
    uncopied = run("mutating.py", tmp_path, "-o", "test.count=300",
                   "-o", "topology.copy.emitted.values=false")
    assert uncopied.returncode == 0, uncopied.stderr
    (audit,) = outputs(tmp_path, "audit").values()
    assert audit["changed_count"] == 300 and audit["pair_types"] == ["tuple"], audit
    assert all(doc.get("changed_after_emit") for doc in audit["changed"]), audit


def test_a_registered_type_that_cannot_be_imported_stops_the_run_before_any_worker(
    tmp_path: Path
) -> None:
    result = run("value_types.py", tmp_path, "-o", "test.count=10", "-o",
                 "topology.kryo.register=[testparts.components.Side, no_such_module.Type]", workers=2)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "storm-zmq: error: topology ValueTypes: topology.kryo.register item 1 (no_such_module.Type): "
        "ModuleNotFoundError: No module named 'no_such_module' (is the project's src/ where it is? "
        "topology.skip.missing.kryo.registrations: true skips such an item)")
    assert not list(tmp_path.glob("*.json"))


def test_an_unregistered_type_of_your_own_says_where_to_register_it(tmp_path: Path) -> None:
    result = run("value_types.py", tmp_path, "-o", "test.count=10", "-o",
                 "topology.kryo.register=[testparts.components.Side]", workers=2)
    assert result.returncode == 1
    assert ("component 'typed', stream 'default': value 3 of the tuple is a testparts.components.Point, "
            "which cannot be serialized (a tuple carries ") in result.stderr
    assert "register your own types in topology.kryo.register)" in result.stderr


def test_always_try_serialize_also_finds_a_value_another_worker_could_not_decode(
    tmp_path: Path
) -> None:
    # A registered dict key with a tuple field encodes, and comes back with a list
    # there: unhashable, so a receiving worker refuses the payload.
    result = run("cell_keys.py", tmp_path, "-o", "topology.testing.always.try.serialize=true",
                 workers=1)
    assert result.returncode == 1
    assert ("component 'values', stream 'default': another worker could not decode this "
            "tuple: payload is not a batch of tuples: TypeError(\"unhashable type: 'list'\")"
            in result.stderr), result.stderr[-2000:]


@pytest.mark.parametrize("transport", ["zmq", "tcp"])
def test_a_tuple_larger_than_the_transport_carries_is_refused_by_its_executor(
    tmp_path: Path, transport: str
) -> None:
    # Found only by the send thread, it would have ended that thread and stalled the
    # worker without a word; refused by the executor that emitted it, it stops the
    # run like any component error, naming the component, the stream and the
    # setting to raise.
    key = f"storm.messaging.{transport}"
    result = run("oversized.py", tmp_path, "--transport", transport,
                 "-o", f"{key}.max.frame.size=4096", "-o", f"{key}.transfer.batch.size=4096",
                 workers=2)
    assert result.returncode == 1
    assert ("component 'values', stream 'default': a tuple of 5,0" in result.stderr
            and "more than the transport carries to another worker (4,071 bytes; raise "
            f"{key}.max.frame.size" in result.stderr), result.stderr[-3000:]


def test_a_busy_port_is_a_clear_error_and_nothing_starts(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = run("wordcount.py", tmp_path, "-o", "test.count=10", ports=[port])
    assert result.returncode == 2
    assert f"port {port} (from supervisor.slots.ports) is busy" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_port_a_clusters_worker_holds_says_how_to_stop_it(tmp_path: Path) -> None:
    # Workers outlive their supervisor: after a try of the cluster, one held the port
    # of the README's local run. A process with a cluster worker's command line
    # (what the runner goes by) holds the port here.
    port = free_port()
    launch = tmp_path / "s1" / "workers" / f"WordCount-1-{port}" / "launch.json"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import socket, sys, time\n"
         f"s = socket.socket(); s.bind(('0.0.0.0', {port})); s.listen(); print('bound', flush=True)"
         "\ntime.sleep(120)", "storm_zmq.cluster.worker", "--launch-file", str(launch)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "bound\n"
        result = run("wordcount.py", tmp_path, "-o", "test.count=10", ports=[port])
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 2
    assert (f"port {port} (from supervisor.slots.ports) is busy: Address already in use; a "
            f"cluster's worker holds it (pid {holder.pid}, WordCount-1-{port}): stop it with "
            f"`storm-zmq kill_workers -o storm.local.dir={tmp_path / 's1'}`") in result.stderr, \
        result.stderr


def test_an_invalid_topology_is_a_clear_error_naming_topology_and_component(tmp_path: Path) -> None:
    result = run("invalid.py", tmp_path)
    assert result.returncode == 2
    assert "topology Invalid" in result.stderr and "'sink'" in result.stderr
    assert "'number'" in result.stderr
    assert "Traceback" not in result.stderr


def test_run_stops_after_the_time_limit_and_runs_cleanup(tmp_path: Path) -> None:
    result = run("wordcount.py", tmp_path, "-t", "2", "-o", "test.count=100000000",
                 "-o", "topology.max.spout.pending=100")
    assert result.returncode == 0, result.stderr
    assert "ran 2 s" in result.stdout
    assert len(outputs(tmp_path, "count")) == 3


def test_ctrl_c_stops_gracefully_and_runs_cleanup(tmp_path: Path) -> None:
    import os
    import signal

    command = [
        sys.executable, "-m", "storm_zmq.cli.main", "run",
        str(PROJECT / "topologies" / "wordcount.py"), "-w", "2",
        "-o", f"supervisor.slots.ports={[free_port(), free_port()]}",
        "-o", f"test.output_dir={tmp_path}", "-o", "test.count=100000000",
        "-o", "topology.max.spout.pending=100",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, cwd=tmp_path)
    assert process.stdout is not None
    for line in process.stdout:  # the first progress line: the topology is running
        if line.startswith("["):
            break
    os.killpg(process.pid, signal.SIGINT)  # what a terminal does: the whole group
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "interrupted" in stdout
    assert "KeyboardInterrupt" not in stderr
    assert len(outputs(tmp_path, "count")) == 3, "cleanup() ran in every count task"


def test_ctrl_c_while_the_workers_start_stops_the_run_without_their_tracebacks(
    tmp_path: Path,
) -> None:
    # The terminal sends Ctrl-C to the whole process group: workers still importing
    # died of it inside Python's start-up, with tracebacks, and the run said a worker
    # "exited unexpectedly".
    import os
    import signal

    command = [
        sys.executable, "-m", "storm_zmq.cli.main", "run",
        str(PROJECT / "topologies" / "wordcount.py"), "-w", "2",
        "-o", f"supervisor.slots.ports={[free_port(), free_port()]}",
        "-o", f"test.output_dir={tmp_path}", "-o", "test.count=100000000",
    ]
    # no storm.yaml of the tester's (~/.storm, $STORM_CONF) in what the first line says
    env = {key: value for key, value in os.environ.items() if key != "STORM_CONF"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, cwd=tmp_path, env={**env, "HOME": str(tmp_path)})
    assert process.stdout is not None
    said = process.stdout.readline()  # said once every worker process is started
    assert "2 worker(s) on port(s)" in said, said
    # and what it runs with: here, no conf/storm.yaml, three -o
    assert said.endswith("; config: built-in defaults (no conf/storm.yaml in this directory), "
                         "3 -o option(s)\n"), said
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode in (0, 130), stderr  # before ready, or stopped once ready
    assert "interrupted" in stdout, stdout
    for sign_of_a_death in ("Traceback", "KeyboardInterrupt", "Fatal Python error", "exited"):
        assert sign_of_a_death not in stderr, stderr


@pytest.mark.parametrize("where", ["--transport", "-o", "storm.yaml"])
def test_the_local_transport_runs_one_worker_however_it_is_named(
        where: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Its workers share one in-process context: two processes would each send
    # into a context with no server, for ever. The short name must count too.
    from storm_zmq.config import DEFAULTS
    from storm_zmq.messaging import TRANSPORT_ALIASES
    from storm_zmq.runtime.local import RunOptions, prepare_run

    options = RunOptions(
        topology_file=str(PROJECT / "topologies" / "wordcount.py"), workers=2,
        conf={**DEFAULTS, **({"storm.messaging.transport": "local"} if where == "storm.yaml" else {})},
        overrides={"storm.messaging.transport": "local"} if where == "-o" else {},
        transport="local" if where == "--transport" else None,
    )
    _, conf, workers = prepare_run(options)
    assert workers == 1 and conf["topology.workers"] == 1
    assert conf["storm.messaging.transport"] == TRANSPORT_ALIASES["local"]
    assert "note: the local transport runs in one process; using 1 worker" in capsys.readouterr().err


def test_the_components_conf_has_the_runs_number_of_workers() -> None:
    # Bug (a semantics audit): `run -w 2` left topology.workers at 1 for components
    from storm_zmq.config import DEFAULTS
    from storm_zmq.runtime.local import RunOptions, prepare_run

    options = RunOptions(topology_file=str(PROJECT / "topologies" / "wordcount.py"), workers=2,
                         conf=dict(DEFAULTS))
    _, conf, workers = prepare_run(options)
    assert workers == conf["topology.workers"] == 2


@pytest.mark.parametrize(("flags", "named"), [
    ({"transport": "tcp", "overrides": {"storm.messaging.transport": "zmq"}},
     "--transport tcp and -o storm.messaging.transport=zmq disagree"),
    ({"debug": True, "overrides": {"topology.debug": False}},
     "-d and -o topology.debug=false disagree"),
])
def test_a_flag_and_an_override_that_disagree_are_refused(flags: dict, named: str) -> None:
    # The flag used to win in silence: a benchmark could run on another transport
    # than the one its command line shows.
    from storm_zmq.config import DEFAULTS
    from storm_zmq.runtime.local import RunError, RunOptions, prepare_run

    options = RunOptions(topology_file=str(PROJECT / "topologies" / "wordcount.py"),
                         conf=dict(DEFAULTS), **flags)
    with pytest.raises(RunError, match=re.escape(named)):
        prepare_run(options)


def test_a_flag_and_an_override_that_agree_run() -> None:
    from storm_zmq.config import DEFAULTS
    from storm_zmq.messaging import TRANSPORT_ALIASES
    from storm_zmq.runtime.local import RunOptions, prepare_run

    options = RunOptions(topology_file=str(PROJECT / "topologies" / "wordcount.py"),
                         conf=dict(DEFAULTS), transport="tcp", debug=True,
                         overrides={"storm.messaging.transport": TRANSPORT_ALIASES["tcp"],
                                    "topology.debug": True})
    _, conf, _ = prepare_run(options)
    assert conf["storm.messaging.transport"] == TRANSPORT_ALIASES["tcp"]


def test_a_run_assigns_under_max_task_parallelism_from_o() -> None:
    from storm_zmq.config import DEFAULTS
    from storm_zmq.runtime.local import RunOptions, prepare_run

    options = RunOptions(topology_file=str(PROJECT / "topologies" / "wordcount.py"),
                         conf=dict(DEFAULTS), overrides={"topology.max.task.parallelism": 1})
    definition, _, _ = prepare_run(options)
    assert {(c.par, c.num_tasks) for c in definition.components.values()} == {(1, 1)}


def test_a_run_uses_no_more_workers_than_executors(capsys: pytest.CaptureFixture[str]) -> None:
    # a worker beyond the executors ran nothing (Storm uses no more workers than that)
    from storm_zmq.config import DEFAULTS
    from storm_zmq.runtime.local import RunOptions, prepare_run

    options = RunOptions(topology_file=str(PROJECT / "topologies" / "wordcount.py"),
                         conf=dict(DEFAULTS), workers=10,
                         overrides={"topology.acker.executors": 0})
    _, _, workers = prepare_run(options)
    assert workers == 6  # sentences 1, split 2, count 3
    assert capsys.readouterr().err == (
        "note: FiniteWordCount has 6 executor(s) in all, so 10 workers would leave 4 with "
        "nothing to run: using 6\n")


@pytest.mark.parametrize(("death", "said"), [
    ("exit0", "exited unexpectedly with code 0"),
    ("sigkill", "was killed by SIGKILL (out of memory?"),
])
def test_a_worker_that_goes_away_unasked_fails_the_run_saying_how_and_what_it_ran(
    tmp_path: Path, death: str, said: str
) -> None:
    # exit code 0 passed for a clean stop: the run sat at 0/s, then exited 0
    result = run("dies.py", tmp_path, "-o", "test.count=100", "-o", f"test.death={death}",
                 "-t", "60")
    assert result.returncode == 1, result.stderr
    assert "error: worker 0 (port " in result.stderr
    assert f"components dying, numbers) {said}" in result.stderr
    assert "a worker died" in result.stdout


def test_a_run_whose_worker_dies_at_once_sums_up_what_the_others_did(tmp_path: Path) -> None:
    # The survivors' final reports were never read: a worker that died before its
    # first report (every half second) left the summary at 0 everywhere.
    result = run("dies.py", tmp_path, "-o", "test.count=100", "-o", "test.death=exit0",
                 "-t", "60", workers=2)
    assert result.returncode == 1, result.stderr
    assert "components dying) exited unexpectedly with code 0" in result.stderr, result.stderr
    numbers = next(line.split() for line in result.stdout.splitlines() if line.strip().startswith("numbers"))
    assert int(numbers[1]) >= 6, result.stdout  # emitted: the dying bolt saw 0 to 5


def test_after_a_worker_dies_the_others_stop_without_waiting_to_send_to_it(tmp_path: Path) -> None:
    # The survivor's send thread, blocked on the dead peer (acking off, a spout that
    # floods it), waited SHUTDOWN_SEND_GRACE (5 s) at the stop, then blamed the peer:
    # "not sent (it does not take them)". The runner now says which peers are gone.
    result = run("dies.py", tmp_path, "-o", "test.count=1000000000", "-o", "test.death=sigkill",
                 "-o", "topology.acker.executors=0", "-t", "60", workers=2)
    assert result.returncode == 1, result.stderr
    assert "was killed by SIGKILL" in result.stderr, result.stderr
    assert "(it does not take them)" not in result.stderr, result.stderr


def test_a_workers_error_is_said_in_one_line_that_names_the_exception() -> None:
    from storm_zmq.runtime.local import one_line

    assert one_line("worker 0: component 'crash' task 3 failed:\nTraceback ...\nZeroDivisionError: x") == (
        "worker 0: component 'crash' task 3 failed")
    assert one_line("worker 1: Traceback (most recent call last):\n  File \"w.py\", line 4\n"
                    "AttributeError: module 'queue' has no attribute 'SimpleQueue'\n") == (
        "worker 1: AttributeError: module 'queue' has no attribute 'SimpleQueue'")
    assert one_line("worker 0: Traceback (most recent call last):\n  File \"b.py\", line 9\n"
                    "ValueError: bad\nraised by process_batch for the batch of key 'k' (3 tuples)") == (
        "worker 0: ValueError: bad")  # a note added to the exception comes after it


def test_free_ports_for_a_run_are_distinct_bindable_and_below_the_ephemeral_range() -> None:
    """The benchmarks' ports: a port the kernel hands out for a bind to port 0 may go
    to another program's connection before the run binds it, so they come from below."""
    ephemeral = ephemeral_port_start()
    ports = free_ports(5)
    assert len(set(ports)) == 5
    if ephemeral > LOWEST_FREE_PORT + 1_000:
        assert all(LOWEST_FREE_PORT <= port < ephemeral for port in ports), ports
    check_ports(ports)  # what a run checks first
