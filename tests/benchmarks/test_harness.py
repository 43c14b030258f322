"""The benchmark harness's own logic: statistics, the lock clock, the scenario registry.

No timing is asserted here (the harness measures; `make bench-quick` runs every scenario
on CI). These tests pin the arithmetic the reports rest on.
"""

from __future__ import annotations

import math

import pytest

from bench import concurrency, hashing, reads, scale, write  # noqa: F401 - registration
from bench.harness import SCENARIOS, Run, compare, percentile, stats
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
    assert all(len(v) == 1 for v in clock.phases.values())
    assert sum(v[0] for v in clock.phases.values()) == pytest.approx(clock.holds[0])


def test_every_scenario_of_the_issue_is_registered():
    expected = {"publish", "update", "noop", "lock", "concurrency", "scale", "read", "hashing"}
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
