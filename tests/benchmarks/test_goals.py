"""The goals of issue 14 as the page judges them, from made-up results (nothing timed)."""

from __future__ import annotations

from bench import goals
from bench.formatting import DASH
from bench.harness import compare
from bench.report import summary
from bench.report_write import section_cost

KiB = 1024
MiB = 1024 * KiB


def _lock(medians: dict[str, list[float]], sizes: list[int]) -> dict:
    comparisons = [
        compare({"backend": b, "files": 10, "file_size": s}, [m], {"empty": [m / 10]})
        for b, ms in medians.items()
        for s, m in zip(sizes, ms, strict=True)
    ]
    flatness = {
        b: {"smallest": sizes[0], "largest": sizes[-1], "ratio": ms[-1] / ms[0]}
        for b, ms in medians.items()
    }
    return {"comparisons": comparisons, "flatness": flatness}


def _met(checks: list[goals.Check]) -> list[bool | None]:
    return [c.met for c in checks]


def test_the_lock_goal_needs_every_size_under_the_target_and_the_full_span_to_judge_flatness():
    full = _lock(
        {"sqlite+local": [2.5e-3, 2.9e-3], "postgresql+s3": [1.9e-3, 2.6e-3]}, [KiB, 2 * MiB]
    )
    assert _met(goals.lock_checks(full)) == [True, True, False, False]
    quick = _lock({"sqlite+local": [2e-3, 2e-3]}, [KiB, MiB])
    assert _met(goals.lock_checks(quick)) == [True, None]
    assert _met(goals.lock_checks(None)) == [None]


def _cost(cpu: float, publish_statements: int) -> dict:
    phases = {
        "read": {"statements": 3, "transactions": 1, "commits": 1, "kinds": {}},
        "claim": {"statements": 3, "transactions": 1, "commits": 1, "kinds": {}},
        "publish": {"statements": publish_statements, "transactions": 1, "commits": 1},
    }
    return {
        "comparisons": [
            compare(
                {"backend": "sqlite+local", "change": change},
                [cpu],
                {"floor": [cpu / 4]},
                wall=compare({}, [cpu * 3], {})["subject"],
            )
            for change in ("one file changed", "every file changed")
        ],
        "statements": {
            "sqlite+local": {
                change: {"phases": phases, "same_every_write": True, "writes": 2}
                for change in ("every file changed", "one file changed")
            }
        },
        "before": {
            "revision": "edges",
            "owner_totals": {"sqlite+local": 26},
            "phases": {
                "sqlite+local": {
                    "read": {"statements": 4, "transactions": 2},
                    "claim": {"statements": 3, "transactions": 1},
                    "publish": {"statements": 15, "transactions": 1},
                }
            },
        },
    }


def test_cpu_and_statement_goals():
    assert _met(goals.cpu_checks(_cost(5e-3, 10))) == [True, True]
    assert _met(goals.cpu_checks(_cost(7e-3, 10))) == [False, False]
    # Both changes sent the same: one line for the backend.
    assert _met(goals.statement_checks(_cost(5e-3, 10))) == [True]
    assert _met(goals.statement_checks(_cost(5e-3, 15))) == [False]
    extra_write = _cost(5e-3, 10)
    extra_write["statements"]["sqlite+local"]["one file changed"]["phases"] = {
        **extra_write["statements"]["sqlite+local"]["one file changed"]["phases"],
        "upload": {"statements": 1, "transactions": 1, "commits": 1},
    }
    assert _met(goals.statement_checks(extra_write)) == [True, False]


def test_the_cost_section_renders_in_the_order_the_scenario_ran():
    text = section_cost(_cost(5e-3, 10))
    assert text.index("one file changed") < text.index("every file changed")
    assert "| sqlite+local | publish | 15 / 1 | 10 / 1 / 1 | 10 / 1 / 1 |" in text
    assert "sqlite+local 26 \u2192 19" in text


def test_publish_goal_reads_ten_files_on_the_embedded_default():
    comparisons = [
        compare(
            {"backend": backend, "files": files, "file_size": size},
            [1.0],
            {"git": [1 / git], "floor": [1 / floor]},
        )
        for backend, files, size, git, floor in (
            ("sqlite+local", 10, KiB, 0.9, 1.4),
            ("sqlite+local", 10, MiB, 0.95, 1.6),
            ("sqlite+local", 1, KiB, 5.0, 5.0),
            ("postgresql+s3", 10, KiB, 5.0, 5.0),
        )
    ]
    assert _met(goals.publish_checks({"comparisons": comparisons})) == [True, False]


def _concurrency(writers: int, *, retry_conflicts: int, legacy: bool = False) -> dict:
    rows = []
    for mode, rate, conflicts, p99 in (
        ("distinct skills", 160.0, 0, 0.05),
        ("distinct workspaces", 90.0, 0, 0.05),
        ("same workspace, CAS", 10.0, 600, 3.5),
        ("same workspace, CAS with retry", 30.0, retry_conflicts, 0.5),
    ):
        for runner in ("processes", "tasks"):
            case = {"mode": mode, "writers": writers}
            if not legacy:
                case["runner"] = runner
            row = compare(case, [rate], {"1 writer": [rate / 2]})
            row |= {
                "latency": {"median": p99 / 3, "p99": p99},
                "conflicts": conflicts,
                "writes": 144,
                "gave_up": 0,
            }
            rows.append(row)
    return {"comparisons": rows}


def test_concurrency_goals_are_judged_at_eight_writers_only():
    at_eight = goals.throughput_checks(_concurrency(8, retry_conflicts=40))
    assert _met(at_eight) == [True, True, True, None]
    assert _met(goals.hot_skill_checks(_concurrency(8, retry_conflicts=40))) == [True, True]
    assert _met(goals.hot_skill_checks(_concurrency(8, retry_conflicts=900))) == [False, False]
    at_two = goals.throughput_checks(_concurrency(2, retry_conflicts=40))
    assert _met(at_two) == [None, None, None, None]
    assert "8 not in this run" in at_two[0].measured


def test_the_goals_table_names_each_goal_once_and_marks_what_was_not_judged():
    text = goals.render(goals.checks({"lock": _lock({"sqlite+local": [1e-3, 1e-3]}, [KiB, MiB])}))
    assert text.count("lock hold, 10 files") == 1
    assert f"| {DASH} |" in text
    assert "not measured (run `--only cost`)" in text


def test_the_summary_groups_concurrency_by_mode_and_runner_and_reads_older_results():
    for legacy, expected in ((False, "distinct skills, tasks"), (True, "distinct skills |")):
        scenarios = {"concurrency": _concurrency(8, retry_conflicts=1, legacy=legacy)}
        text = summary(scenarios, {"concurrency": "5. Concurrency"})
        assert expected in text
