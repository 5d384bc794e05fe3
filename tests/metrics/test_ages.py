"""ReportAges: a watching viewer's ages of the workers' reports (pure)."""

from __future__ import annotations

from storm_zmq.metrics.ages import ReportAges

HOUR = 3600.0


def test_at_first_sight_the_clocks_comparison_stands() -> None:
    ages = ReportAges(max_gap=30)
    assert ages.ages({"a:1": (1000.0, 2.0), "b:2": (500.0, HOUR)}, now=10.0) == {"a:1": 2.0, "b:2": HOUR}


def test_a_worker_with_a_clock_behind_is_judged_by_change_once_it_changes() -> None:
    ages = ReportAges(max_gap=30)
    assert ages.ages({"a:1": (100.0, HOUR)}, now=0.0) == {"a:1": HOUR}  # looks stale at first
    # it reported again since the last look, one second ago: at most a second old
    assert ages.ages({"a:1": (101.0, HOUR)}, now=1.0) == {"a:1": 1.0}
    assert ages.ages({"a:1": (101.0, HOUR + 20)}, now=21.0) == {"a:1": 21.0}  # then stopped
    assert ages.ages({"a:1": (101.0, HOUR + 40)}, now=41.0) == {"a:1": 41.0}


def test_a_dead_worker_with_a_clock_ahead_ages_while_watched() -> None:
    ages = ReportAges(max_gap=30)
    assert ages.ages({"a:1": (9e9, 0.0)}, now=5.0) == {"a:1": 0.0}
    assert ages.ages({"a:1": (9e9, 0.0)}, now=25.0) == {"a:1": 20.0}
    assert ages.ages({"a:1": (9e9, 0.0)}, now=45.0) == {"a:1": 40.0}


def test_after_a_change_the_clocks_comparison_no_longer_counts() -> None:
    ages = ReportAges(max_gap=30)
    ages.ages({"a:1": (1.0, 0.5)}, now=0.0)
    assert ages.ages({"a:1": (2.0, 10 * HOUR)}, now=3.0) == {"a:1": 3.0}
    assert ages.ages({"a:1": (1.0, 0.0)}, now=4.0) == {"a:1": 1.0}, "back to the first value: a change too"
    assert ages.ages({"a:1": (1.0, 0.0)}, now=9.0) == {"a:1": 6.0}  # dated at the look at 3.0


def test_a_live_worker_looked_at_every_gap_is_never_older_than_the_gap() -> None:
    ages = ReportAges(max_gap=30)
    seen = [ages.ages({"a:1": (float(look), 0.0)}, now=look * 29.0)["a:1"] for look in range(5)]
    assert seen == [0.0, 29.0, 29.0, 29.0, 29.0]


def test_looks_further_apart_than_max_gap_start_afresh() -> None:
    """A worker that changed once, just after a look, and died: an hour later
    nobody can tell it from a live one by change; the clocks' answer is used."""
    ages = ReportAges(max_gap=30)
    ages.ages({"a:1": (1.0, 0.0)}, now=0.0)
    ages.ages({"a:1": (2.0, 0.0)}, now=1.0)
    assert ages.ages({"a:1": (3.0, HOUR)}, now=HOUR) == {"a:1": HOUR}
    assert ages.ages({"a:1": (3.0, HOUR + 10)}, now=HOUR + 10) == {"a:1": HOUR + 10}


def test_a_worker_no_longer_reporting_is_forgotten_and_starts_afresh() -> None:
    ages = ReportAges(max_gap=30)
    ages.ages({"a:1": (1.0, 0.0), "b:2": (1.0, 0.0)}, now=0.0)
    ages.ages({"a:1": (2.0, 0.0), "b:2": (1.0, 0.0)}, now=1.0)
    assert ages.ages({"b:2": (1.0, 0.0)}, now=2.0) == {"b:2": 2.0}
    assert ages.ages({"a:1": (2.0, HOUR), "b:2": (1.0, 0.0)}, now=3.0) == {"a:1": HOUR, "b:2": 3.0}


def test_a_report_without_a_time_keeps_the_clocks_answer() -> None:
    ages = ReportAges(max_gap=30)
    assert ages.ages({"a:1": (None, None)}, now=0.0) == {"a:1": None}
    assert ages.ages({"a:1": (None, None)}, now=20.0) == {"a:1": None}
