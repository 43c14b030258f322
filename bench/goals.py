"""The goals of issue 14 (the write path's cost), judged from one run's results.

Each goal is a target from the issue and the figure of this run it is read from; the page
lists them in its summary (`bench/report.py`) and the lock section repeats its own. Nothing
here measures: a check takes the results JSON and says what was measured and whether it
meets the target, or that the run did not measure it (`met` is None). Where the issue
names no number, the target says how it is read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from bench.formatting import DASH, TIMES, Json, fmt_bytes, fmt_ratio, fmt_time, table

MS: Final = 1e-3
# Lock hold median, 10 files, per database (the backend name's first part).
LOCK_HOLD_MAX: Final = {"postgresql": 2 * MS, "sqlite": 3 * MS}
# Largest file size's median hold over the smallest's (1 KiB to 2 MiB in a full run).
LOCK_FLATNESS_MAX: Final = 1.2
LOCK_FLATNESS_SIZES: Final = (1024, 2 * 1024 * 1024)
CLIENT_CPU_MAX: Final = 6 * MS
PUBLISH_GIT_MAX: Final = 1.0
PUBLISH_FLOOR_MAX: Final = 1.5
PUBLISH_FILES: Final = 10
EMBEDDED: Final = "sqlite+local"
DISTINCT_SKILLS_MIN: Final = 150.0
WRITERS: Final = 8
WRITE_PHASES: Final = ("claim", "publish")


@dataclass(frozen=True)
class Check:
    """One line of the goals table: a goal, its target, what this run measured."""

    goal: str
    target: str
    measured: str
    met: bool | None


def _met(check: Check) -> str:
    if check.met is None:
        return DASH
    return "yes" if check.met else "**no**"


def render(checks: Sequence[Check]) -> str:
    """The goals as a table, the goal named once for its consecutive checks."""
    rows = []
    previous = None
    for check in checks:
        rows.append(
            [
                check.goal if check.goal != previous else "",
                check.target,
                check.measured,
                _met(check),
            ]
        )
        previous = check.goal
    return table(["goal (issue 14)", "target", "this run", "met"], rows)


def _missing(goal: str, target: str, scenario: str) -> Check:
    return Check(goal, target, f"not measured (run `--only {scenario}`)", None)


def _database(backend: str) -> str:
    return backend.split("+", 1)[0]


# ---------------------------------------------------------------- lock hold


def lock_checks(lock: Json | None) -> list[Check]:
    """Lock hold median per database at every file size, and its flatness."""
    goal = "lock hold, 10 files"
    if not lock or not lock.get("comparisons"):
        return [_missing(goal, "median ≤ 2 ms (PostgreSQL), 3 ms (SQLite)", "lock")]
    checks = []
    comparisons = lock["comparisons"]
    for backend in dict.fromkeys(c["case"]["backend"] for c in comparisons):
        rows = [c for c in comparisons if c["case"]["backend"] == backend]
        limit = LOCK_HOLD_MAX.get(_database(backend))
        if limit is None:
            continue
        medians = [c["subject"]["median"] for c in rows]
        sizes = [c["case"]["file_size"] for c in rows]
        checks.append(
            Check(
                goal,
                f"{backend}: median ≤ {fmt_time(limit)} at every file size",
                f"{fmt_time(min(medians))} {DASH} {fmt_time(max(medians))} "
                f"({fmt_bytes(min(sizes))} {DASH} {fmt_bytes(max(sizes))})" + _yardstick(rows),
                max(medians) <= limit,
            )
        )
        flat = lock.get("flatness", {}).get(backend)
        if flat:
            span = (flat["smallest"], flat["largest"]) == LOCK_FLATNESS_SIZES
            checks.append(
                Check(
                    goal,
                    f"{backend}: flat, largest ÷ smallest file size ≤ "
                    f"{fmt_ratio(LOCK_FLATNESS_MAX)} (1 KiB to 2 MiB)",
                    f"{fmt_ratio(flat['ratio'])} ({fmt_bytes(flat['largest'])} ÷ "
                    f"{fmt_bytes(flat['smallest'])})",
                    flat["ratio"] <= LOCK_FLATNESS_MAX if span else None,
                )
            )
    return checks


def _yardstick(rows: list[Json]) -> str:
    """The compare-and-swap transaction of the same run, where it was measured."""
    cas = [
        c["references"]["CAS transaction"]["median"]
        for c in rows
        if "CAS transaction" in c["references"]
    ]
    if not cas:
        return ""
    ratios = [c["ratios"]["CAS transaction"] for c in rows]
    return (
        f"; the CAS transaction of the same run {fmt_time(min(cas))} {DASH} "
        f"{fmt_time(max(cas))}, so ÷ CAS {fmt_ratio(min(ratios))} {DASH} {fmt_ratio(max(ratios))}"
    )


# ---------------------------------------------------------------- client CPU, statements


def cpu_checks(cost: Json | None) -> list[Check]:
    """Client CPU per write for one and every file changed, per backend."""
    goal = "client CPU per write, 10 files"
    target = f"≤ {fmt_time(CLIENT_CPU_MAX)}"
    if not cost or not cost.get("comparisons"):
        return [_missing(goal, target, "cost")]
    return [
        Check(
            goal,
            f"{c['case']['backend']}, {c['case']['change']}: {target}",
            f"{fmt_time(c['subject']['median'])} (floor "
            f"{fmt_time(c['references']['floor']['median'])})",
            c["subject"]["median"] <= CLIENT_CPU_MAX,
        )
        for c in cost["comparisons"]
    ]


def statement_checks(cost: Json | None) -> list[Check]:
    """Write transactions per write and the publish's statements, before and now."""
    goal = "one write = two write transactions, the publish batched"
    target = "claim 1 + publish 1 write transactions; fewer publish statements than before"
    if not cost or not cost.get("statements"):
        return [_missing(goal, target, "cost")]
    before = cost.get("before", {}).get("phases", {})
    checks = []
    for backend in _backends(cost):
        changes = cost["statements"][backend]
        # One line per backend when every change sent the same, else one per change.
        distinct = {json.dumps(c["phases"], sort_keys=True): n for n, c in changes.items()}
        labels = ["both changes"] if len(distinct) == 1 else list(changes)
        for label in labels:
            phases = changes[label if label in changes else next(iter(changes))]["phases"]
            writes = [phases.get(p, {}).get("transactions", 0) for p in WRITE_PHASES]
            others = sum(
                v["transactions"] for p, v in phases.items() if p not in (*WRITE_PHASES, "read")
            )
            publish = phases.get("publish", {}).get("statements", 0)
            was = before.get(backend, {}).get("publish", {}).get("statements")
            total = sum(v["statements"] for v in phases.values())
            was_total = sum(v["statements"] for v in before.get(backend, {}).values())
            checks.append(
                Check(
                    goal,
                    f"{backend}, {label}: {target}",
                    f"write transactions {sum(writes) + others} (claim {writes[0]}, publish "
                    f"{writes[1]}); publish {publish} statements (before {was}); all phases "
                    f"{total} (before {was_total or 'n/a'})",
                    writes == [1, 1] and others == 0 and was is not None and publish < was,
                )
            )
    return checks


def _backends(cost: Json) -> list[str]:
    """The backends of the cost scenario in the order it ran them."""
    ran = [c["case"]["backend"] for c in cost.get("comparisons", [])]
    return list(dict.fromkeys([*ran, *cost.get("statements", {})]))


# ---------------------------------------------------------------- publish


def publish_checks(publish: Json | None) -> list[Check]:
    """Publish of a 10-file package on the embedded default against git and the floor."""
    goal = f"publish, {PUBLISH_FILES} files, {EMBEDDED}"
    if not publish or not publish.get("comparisons"):
        return [_missing(goal, f"÷ git ≤ {fmt_ratio(PUBLISH_GIT_MAX)}", "publish")]
    rows = [
        c
        for c in publish["comparisons"]
        if c["case"]["backend"] == EMBEDDED and c["case"]["files"] == PUBLISH_FILES
    ]
    checks = []
    for reference, limit in (("git", PUBLISH_GIT_MAX), ("floor", PUBLISH_FLOOR_MAX)):
        ratios = [(c["case"]["file_size"], c["ratios"][reference]) for c in rows]
        if not ratios:
            checks.append(_missing(goal, f"÷ {reference} ≤ {fmt_ratio(limit)}", "publish"))
            continue
        worst = max(ratio for _, ratio in ratios)
        shown = ", ".join(f"{fmt_ratio(r)} ({fmt_bytes(s)})" for s, r in ratios)
        if reference == "floor":
            shown += _checked(rows)
        checks.append(
            Check(
                goal,
                f"÷ {reference} ≤ {fmt_ratio(limit)} at every file size",
                shown,
                not math.isnan(worst) and worst <= limit,
            )
        )
    return checks


def _checked(rows: list[Json]) -> str:
    """The ratios to the checked floor (hashing and the content check included), if run."""
    ratios = [c["ratios"]["checked floor"] for c in rows if "checked floor" in c["ratios"]]
    if not ratios:
        return ""
    return "; ÷ checked floor (the floor plus hashing and the content check) " + ", ".join(
        fmt_ratio(r) for r in ratios
    )


# ---------------------------------------------------------------- concurrency


def _at(comparisons: list[Json], mode: str, runner: str) -> Json | None:
    """The comparison of `mode` and `runner` with the most writers (8 in a full run)."""
    rows = [
        c
        for c in comparisons
        if c["case"]["mode"] == mode and c["case"].get("runner", "processes") == runner
    ]
    return max(rows, key=lambda c: c["case"]["writers"]) if rows else None


def _writers_note(row: Json) -> str:
    writers = row["case"]["writers"]
    return "" if writers == WRITERS else f" ({writers} writers: {WRITERS} not in this run)"


def throughput_checks(concurrency: Json | None) -> list[Check]:
    """Distinct skills of one workspace at 8 writers; distinct workspaces against 1 writer."""
    throughput = "8 writers, distinct skills of one workspace (PostgreSQL)"
    scaling = "distinct workspaces scale with processes"
    comparisons = (concurrency or {}).get("comparisons", [])
    checks = []
    for runner in ("processes", "tasks"):
        row = _at(comparisons, "distinct skills", runner)
        target = f"{runner}: ≥ {DISTINCT_SKILLS_MIN:.0f} writes/s"
        if row is None:
            checks.append(_missing(throughput, target, "concurrency"))
            continue
        rate = row["subject"]["median"]
        checks.append(
            Check(
                throughput,
                target,
                f"{rate:.0f} writes/s{_writers_note(row)}",
                rate >= DISTINCT_SKILLS_MIN if row["case"]["writers"] == WRITERS else None,
            )
        )
    for runner in ("processes", "tasks"):
        row = _at(comparisons, "distinct workspaces", runner)
        if row is None or row["case"]["writers"] == 1:
            continue
        ratio = row["ratios"]["1 writer"]
        checks.append(
            Check(
                scaling,
                f"{runner}: more writers, more writes/s (no number given; read as "
                f"÷ 1 writer > 1{TIMES}; judged on processes)",
                f"{fmt_ratio(ratio)} ÷ 1 writer, {row['subject']['median']:.0f} writes/s"
                f"{_writers_note(row)}",
                ratio > 1 if runner == "processes" and row["case"]["writers"] == WRITERS else None,
            )
        )
    return checks


def _hot_figures(row: Json) -> str:
    return (
        f"{row['subject']['median']:.0f} writes/s, {row['conflicts']} conflicts for "
        f"{row['writes']} writes, p50 {fmt_time(row['latency']['median'])}, "
        f"p99 {fmt_time(row['latency']['p99'])}"
    )


def hot_skill_checks(concurrency: Json | None) -> list[Check]:
    """`write_with_retry` on one hot skill next to raw compare-and-swap, same run."""
    goal = "8 writers on one hot skill, compare-and-swap"
    comparisons = (concurrency or {}).get("comparisons", [])
    checks = []
    for runner in ("processes", "tasks"):
        raw = _at(comparisons, "same workspace, CAS", runner)
        retried = _at(comparisons, "same workspace, CAS with retry", runner)
        target = (
            f"{runner}: write_with_retry against raw CAS (no number given; read as fewer "
            "conflicts per write and a lower p99, none given up)"
        )
        if raw is None or retried is None:
            checks.append(_missing(goal, target, "concurrency"))
            continue
        per_write = [r["conflicts"] / max(r["writes"], 1) for r in (raw, retried)]
        gave_up = retried.get("gave_up", 0)
        checks.append(
            Check(
                goal,
                target,
                f"retry: {_hot_figures(retried)}"
                + (f", {gave_up} gave up" if gave_up else "")
                + f"; raw: {_hot_figures(raw)}{_writers_note(raw)}",
                (
                    per_write[1] < per_write[0]
                    and retried["latency"]["p99"] < raw["latency"]["p99"]
                    and not gave_up
                )
                if raw["case"]["writers"] == WRITERS
                else None,
            )
        )
    return checks


def checks(scenarios: Json) -> list[Check]:
    """Every goal of issue 14, in the issue's order."""
    return [
        *lock_checks(scenarios.get("lock")),
        *cpu_checks(scenarios.get("cost")),
        *publish_checks(scenarios.get("publish")),
        *throughput_checks(scenarios.get("concurrency")),
        *statement_checks(scenarios.get("cost")),
        *hot_skill_checks(scenarios.get("concurrency")),
    ]
