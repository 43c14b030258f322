"""The benchmark harness's own logic: statistics, the lock clock, the scenario registry.

No timing is asserted here (the harness measures; `make bench-quick` runs every scenario
on CI). These tests pin the arithmetic the reports rest on.
"""

from __future__ import annotations

import math

import pytest

from bench import (  # noqa: F401 - registration
    concurrency,
    cost,
    garbage,
    hashing,
    reads,
    reconcile,
    scale,
    write,
)
from bench.formatting import fmt_spread
from bench.harness import SCENARIOS, Run, compare, percentile, rotated, round_robin, stats
from bench.report import summary
from bench.scale import _sqlite_plan
from bench.services import Services
from bench.write import LOCKED_POINTS, LockClock


def test_percentiles_interpolate_between_order_statistics():
    samples = [4.0, 1.0, 3.0, 2.0, 5.0]
    assert percentile(samples, 0) == 1.0
    assert percentile(samples, 50) == 3.0
    assert percentile(samples, 100) == 5.0
    assert percentile(samples, 10) == pytest.approx(1.4)
    assert percentile(samples, 90) == pytest.approx(4.6)
    assert math.isnan(percentile([], 50))


def test_stats_report_median_and_spread():
    s = stats([1.0, 2.0, 3.0, 4.0])
    assert s["n"] == 4
    assert s["median"] == 2.5
    assert s["min"] == 1.0
    assert s["max"] == 4.0
    assert s["p10"] <= s["median"] <= s["p90"]


def test_compare_divides_medians():
    result = compare({"files": 1}, [2.0, 4.0, 6.0], {"git": [1.0, 2.0, 3.0], "zero": [0.0]})
    assert result["ratios"]["git"] == 2.0
    assert math.isnan(result["ratios"]["zero"])
    assert result["case"] == {"files": 1}


async def test_the_lock_clock_times_only_committed_writes():
    clock = LockClock()
    # A write that committed, then one that was refused under the lock (no commit).
    for name in ("publish.begin", *LOCKED_POINTS):
        await clock.hit(name)
    for name in ("publish.begin", "publish.locked", "publish.checked"):
        await clock.hit(name)
    assert len(clock.holds) == 1
    assert clock.holds[0] >= 0
    assert len(clock.writes) == 1
    assert set(clock.writes[0]) == set(LOCKED_POINTS[1:])
    assert sum(clock.writes[0].values()) == pytest.approx(clock.holds[0])


async def test_contenders_run_once_each_in_an_order_that_rotates():
    ran: list[str] = []

    def contender(name: str, seconds: float):
        async def run() -> float:
            ran.append(name)
            return seconds

        return run

    contenders = {"registry": contender("registry", 1.0), "git": contender("git", 2.0)}
    for rep in range(3):
        assert await rotated(rep, contenders) == {"registry": 1.0, "git": 2.0}
    assert ran == ["registry", "git", "git", "registry", "registry", "git"]


def test_cases_take_turns_within_each_round():
    assert list(round_robin(["a", "b", "c"], 2)) == [
        (0, "a"),
        (0, "b"),
        (0, "c"),
        (1, "a"),
        (1, "b"),
        (1, "c"),
    ]
    assert list(round_robin(["a"], 0)) == []


def test_every_scenario_of_the_issue_is_registered():
    expected = {
        "publish",
        "update",
        "noop",
        "lock",
        "concurrency",
        "scale",
        "read",
        "hashing",
        "reconcile",
        "gc",
        "cost",
    }
    assert expected <= set(SCENARIOS)


async def test_a_scenario_runs_end_to_end(tmp_path):
    services = Services(tmp_path)
    try:
        result = await SCENARIOS["hashing"].function(
            Run(quick=True, services=services, scratch=tmp_path)
        )
    finally:
        services.close()
    assert result["comparisons"]
    for comparison in result["comparisons"]:
        assert comparison["subject"]["n"] == 2
        assert set(comparison["ratios"]) == {"blake3 per file", "blake3 one buffer"}


def test_spreads_share_the_median_unit():
    assert fmt_spread({"n": 3, "median": 0.0248, "p10": 0.0231, "p90": 0.0352}) == (
        "24.8 ms (23.1\u201335.2)"
    )
    assert fmt_spread({"n": 1, "median": 1.5, "p10": 1.5, "p90": 1.5}) == "1.50 s"


def test_the_summary_gives_each_ratio_its_range():
    scenarios = {
        "update": {
            "title": "Update",
            "comparisons": [
                compare({"backend": "b", "files": n}, [2.0 * n], {"git": [1.0], "floor": [0.5]})
                for n in (1, 2)
            ],
        }
    }
    text = summary(scenarios, {"update": "2. Update"})
    assert "[2. Update](#2-update)" in text
    assert "\u00f7 git 2.00\u20134.00\u00d7; \u00f7 floor 4.00\u20138.00\u00d7" in text


def test_the_sqlite_plan_reader_counts_table_scans_only():
    rows = [
        (2, 0, 0, detail)
        for detail in (
            "CO-ROUTINE one",
            "SCAN CONSTANT ROW",
            "SCAN one",
            "SEARCH skills USING INDEX uq_skills_live_slug (workspace=? AND slug=?) LEFT-JOIN",
            "CO-ROUTINE (subquery-1)",
            "SCAN (subquery-1)",
            "SCAN events",
            "SEARCH versions USING INTEGER PRIMARY KEY (rowid=?)",
        )
    ]
    plan = _sqlite_plan(rows)
    assert plan["full_scans"] == ["events"]
    assert plan["indexes"] == ["uq_skills_live_slug", "versions primary key"]
