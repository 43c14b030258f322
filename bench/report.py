"""Regenerate `docs/benchmarks.md` and its plots (`docs/benchmarks/*.png`) from the results.

    python -m bench.report [bench/results/latest.json]

Everything in the page comes from the JSON except `bench/findings.md` (the analysis, written
by hand after a run and included as it is). The sections live beside the scenarios they
render: `bench/report_write.py`, `bench/report_system.py`, `bench/report_storage.py`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from bench import goals, report_search, report_storage, report_system, report_write
from bench.formatting import (
    DASH,
    PLOTS,
    ROOT,
    TIMES,
    Json,
    fmt_bytes,
    fmt_ratio,
    fmt_time,
    ordered,
    references_header,
    table,
)
from bench.sections import Section

DOC = ROOT / "docs" / "benchmarks.md"
FINDINGS = ROOT / "bench" / "findings.md"
DEFAULT_RESULTS = ROOT / "bench" / "results" / "latest.json"

# In the order (the page numbers its sections in this order).
# The cost scenario comes last so that the sections before it keep their numbers.
SECTIONS: dict[str, Section] = {
    **{k: v for k, v in report_write.SECTIONS.items() if k != "cost"},
    **{k: v for k, v in report_system.SECTIONS.items() if k != "profile"},
    **report_storage.SECTIONS,
    **report_search.SECTIONS,
    "profile": report_system.SECTIONS["profile"],
    "cost": report_write.SECTIONS["cost"],
}

METHOD = """### How the figures are made

- **Side by side.** Inside every repetition the registry and each reference run one after
  the other, on a package of the same shape with its own unique content (nothing is
  deduplicated away); in the publish and update scenarios their order rotates from one
  repetition to the next, so none always inherits the disk's writeback or the caches of the
  one before it, and the lock scenario's file sizes take turns. The first repetition of each
  case is a discarded warm-up (a warm process: imports done, pools and clients connected).
  Ratios are medians over medians from the same loop.
- **References.** `git add -A && git commit` in a scratch repository, with
  `core.fsync=committed` (every contender is durable) and automatic gc off; the tree is
  written before the clock starts. The naive writer writes the files one at a time into a
  fresh folder, each with fsync. The floor is the same blob puts through the store's
  `put_many`, as the registry's uploads go (in parallel up to the registry's upload
  concurrency; a local store takes the batch in one worker-thread hop), into the backend's
  own store, plus one empty transaction that takes the same workspace lock
  (`lock_workspace` in a write transaction).
- **Backends.** `sqlite+local` is the embedded default; `postgresql+s3` is PostgreSQL
  with moto's S3 server in a separate process (in the test process it would share the
  interpreter lock with the registry being measured). moto answers a request in a few
  milliseconds, much slower than a put to a local disk, so on that backend the floor
  (which pays the same requests) is the reference to read. The concurrency, scale and
  GC runs use PostgreSQL with a local store.
- **Seeding.** Scenarios that need thousands of skills or blobs (scale, reconcile, GC)
  insert the rows a committed write leaves in bulk with SQL (`COPY` on PostgreSQL) and
  write the objects straight into the local store's layout (`bench/seed.py`); reconcile
  and GC need the bytes, so every object really exists. Reconcile checks the seeded
  registry with `fsck` before measuring.
- **Instrumentation** goes through the write path's failpoints (`registry/failpoints.py`):
  a `Failpoints` implementation that only reads `time.perf_counter()`, so production
  timing is unchanged.
- **Machine probes.** The machine's speed moves from day to day (one revision's SQLite lock
  hold read 1.84 ms one day and 4.2-6.6 ms the next, a fixed loop of pure Python 2.5 times
  slower), which ratios cancel and absolute targets do not; each run records a CPU probe,
  an fsync probe and a probe of the write path's own domain work (validate, hash, scan ten
  4 KiB files: the CPU probe's tight loop read fast on a day when a write cost twice its
  usual CPU) at its start and end (`bench/machine.py`), printed under "This run".
- **Checks.** The harness fails the run if a no-op re-save uploads a blob or creates a
  version, if a pinned read returns bytes other than the folder's, if a committed write
  does not report exactly one lock hold, if a reconcile does anything but what its case
  expects (every skill written; nothing hashed or written with no drift; exactly the
  drifted skills repaired), or if a GC run reclaims anything but the seeded orphans.
- **Counting.** The cost scenario counts the statements of one write with a
  `before_cursor_execute` listener and puts each in a phase by the failpoint reached last;
  BEGIN and COMMIT are counted apart, from the engine's `begin` and `commit` events, so
  both databases count them alike. Counts are exact and do not move with the machine's
  load; the figures before issue 14's work are constants in `bench/cost.py`.
- **Goals.** The targets of issue 14 live in `bench/goals.py`, which reads them against
  this run's figures for the summary; a goal whose case the run did not measure (a quick
  run has no 8 writers and no 2 MiB files) is shown and not judged.
- **Tests.** `tests/benchmarks/test_harness.py` pins the statistics, the lock clock and
  the scenario registry, and runs one scenario end to end; `test_cost.py` checks the
  statement counter and the concurrency writers on both databases, `test_goals.py` the
  goals' judgement and the new tables; CI runs `make bench-quick` (every scenario, tiny
  repetitions) after the test suite. No test asserts on time.
- **Adding a scenario.** Write an async function taking a `Run` and returning
  `{"comparisons": [compare(case, subject_samples, {reference: samples})]}`, decorate it
  with `@scenario(name, title)` in a `bench/` module imported by `bench/run.py`, and give
  it a `Section` in one of the `bench/report_*.py` modules (listed in `bench/report.py`).

"""

PENDING = {
    "reconcile": "reconcile of 1,000 skills with no drift and with 1% drift",
    "gc": "GC over 100,000 blobs",
}


# What the summary groups a scenario's figures by (default: the backend).
_SUMMARY_GROUP = {
    "concurrency": ("mode", "runner"),
    "reconcile": ("case",),
    "hashing": ("file_size",),
    "cost": ("backend", "change"),
}


def _anchor(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading (GitHub's rule)."""
    slug = re.sub(r"[^\w\- ]", "", heading.lower())
    return "#" + slug.replace(" ", "-")


def _span(values: Sequence[float]) -> str:
    low, high = min(values), max(values)
    if fmt_ratio(low) == fmt_ratio(high):
        return fmt_ratio(low)
    return f"{fmt_ratio(low).removesuffix(TIMES)}{DASH}{fmt_ratio(high)}"


def _time_span(values: Sequence[float]) -> str:
    low, high = min(values), max(values)
    if fmt_time(low) == fmt_time(high):
        return fmt_time(low)
    return f"{fmt_time(low)} {DASH} {fmt_time(high)}"


def _rate_span(values: Sequence[float]) -> str:
    return f"{min(values):.0f}{DASH}{max(values):.0f} writes/s"


def _group_label(case: Json, keys: Sequence[str]) -> str:
    """The case's values of `keys`, those it has, joined (a file size in its unit)."""
    values = [
        fmt_bytes(int(case[k])) if k == "file_size" else str(case[k]) for k in keys if k in case
    ]
    return ", ".join(values)


def summary(scenarios: Json, headings: dict[str, str]) -> str:
    """One row per scenario and group: the registry's medians and every ratio's range."""
    rows = []
    for name in SECTIONS:
        comparisons = scenarios.get(name, {}).get("comparisons", [])
        if not comparisons:
            continue
        keys = _SUMMARY_GROUP.get(name, ("backend",))
        groups: dict[str, list[Json]] = {}
        for c in comparisons:
            groups.setdefault(_group_label(c["case"], keys), []).append(c)
        refs = references_header(comparisons)
        for group, members in groups.items():
            ratios = []
            for ref in ordered(list(dict.fromkeys(r for c in members for r in c["ratios"])), refs):
                values = [c["ratios"][ref] for c in members if ref in c["ratios"]]
                ratios.append(f"÷ {ref} {_span(values)}")
            rows.append(
                [
                    f"[{headings[name]}]({_anchor(headings[name])})",
                    group,
                    str(len(members)),
                    _time_span([c["subject"]["median"] for c in members])
                    if name != "concurrency"
                    else _rate_span([c["subject"]["median"] for c in members]),
                    "; ".join(ratios),
                ]
            )
    return table(["scenario", "group", "figures", "registry (medians)", "ratios (range)"], rows)


def _load(meta: Json) -> str:
    load = meta.get("load_average") or {}
    start, end = load.get("start"), load.get("end")
    if not start or not end:
        return ""

    def three(values: list[float]) -> str:
        return " / ".join(f"{v:.2f}" for v in values)

    return f"; load average (1 / 5 / 15 min) {three(start)} at the start, {three(end)} at the end"


def _speed(meta: Json) -> str:
    speed = meta.get("speed") or {}
    start, end = speed.get("start"), speed.get("end")
    if not start or not end:
        return ""

    def both(key: str) -> str:
        return f"{fmt_time(start[key])} at the start, {fmt_time(end[key])} at the end"

    domain = ""
    if "domain" in start and "domain" in end:  # runs before the probe have two
        domain = (
            f", the write path's domain work on ten 4 KiB files (validate, hash, scan) "
            f"{both('domain')}"
        )
    return (
        f"; machine probes (`bench/machine.py`): a fixed loop of pure Python {both('cpu')}, "
        f"a 4 KiB rewrite and its `fdatasync` {both('fsync')}{domain}"
    )


def render(document: Json) -> str:
    meta = document["meta"]
    scenarios = document["scenarios"]
    machine = meta["machine"]
    parts = [
        "# Benchmarks\n\n",
        (
            "<!-- Generated by `make bench` (bench/report.py) from bench/results/latest.json; "
            "edit bench/findings.md or bench/report.py, not this file. -->\n\n"
        ),
        (
            "Performance is judged as ratios to references measured side by side in the same "
            "run, never as timed assertions in tests. Each figure is the median over repeated "
            f"runs with its spread (p10{DASH}p90, in brackets); `÷ X` is the registry's median "
            "over X's median, both from the same loop. The machine is shared with other work, so "
            "absolute times move between runs; the ratios are what to read.\n\n"
        ),
        "## How to run\n\n",
        (
            "<!-- not run: benchmark runs take minutes; CI runs `make bench-quick` -->\n"
            "```sh\n"
            "make bench         # every scenario, regenerates this page (< 15 min)\n"
            "make bench-quick   # smoke run of every scenario (CI), JSON only\n"
            ".venv/bin/python -m bench.run --only publish lock   # some scenarios\n"
            ".venv/bin/python -m bench.report                    # this page from the JSON\n"
            "```\n\n"
        ),
        (
            "PostgreSQL and S3 start by themselves (the test harness's cluster, moto's server "
            "in its own process). Results: `bench/results/latest.json`. Scenarios are functions "
            "registered with `@scenario` in `bench/`, one module per group.\n\n"
        ),
        METHOD,
        (
            f"**This run:** {meta['date']}, revision `{meta['revision']}`, "
            f"{'quick' if meta['quick'] else 'full'} mode, {meta['elapsed'] / 60:.1f} min; "
            f"{machine['cpus']} CPUs, Python {machine['python']}, {machine['platform']}, "
            f"{machine['git']}, blake3 {machine['blake3']}{_load(meta)}{_speed(meta)}.\n\n"
        ),
    ]
    headings = {
        name: f"{number}. {scenarios[name]['title']}"
        for number, name in enumerate((n for n in SECTIONS if n in scenarios), 1)
    }
    parts.append("## Summary\n\n")
    parts.append("### Goals of issue 14: the write path's cost\n\n")
    parts.append(
        "Each goal's target and the figure of this run it is read from (`bench/goals.py`); "
        f"{DASH} in `met`: not judged (not measured in this run, or no number to judge by). "
        "The sections below have the figures' spread and references.\n\n"
    )
    parts.append(goals.render(goals.checks(scenarios)))
    parts.append("\n### Every scenario\n\n")
    parts.append(
        "Every figure's ratio to its references, as a range over the cases of each group "
        "(the sections below have the figures, their spread and the references' own "
        "times). Concurrency's ratios are of throughput, not time; the cost scenario's "
        "medians are client CPU per write.\n\n"
    )
    parts.append(summary(scenarios, headings))
    parts.append("\n")
    if FINDINGS.exists():
        parts.append(FINDINGS.read_text())
        parts.append("\n")
    for name, section in SECTIONS.items():
        if name not in scenarios:
            continue
        parts.append(f"## {headings[name]}\n\n{section.description}\n\n")
        parts.append(section.render(scenarios[name]))
        parts.append("\n")
    missing = [text for name, text in PENDING.items() if name not in scenarios]
    if missing:
        parts.append("## Not measured in this run\n\n")
        parts.extend(f"- {text}\n" for text in missing)
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.report",
        description="Regenerate docs/benchmarks.md and its plots from a results file.",
    )
    parser.add_argument(
        "results",
        nargs="?",
        type=Path,
        default=DEFAULT_RESULTS,
        help="the JSON `python -m bench.run` wrote (default: bench/results/latest.json)",
    )
    source: Path = parser.parse_args(sys.argv[1:] if argv is None else argv).results
    try:
        document = json.loads(source.read_text())
    except (OSError, ValueError) as exc:
        print(f"[bench] cannot read results from {source}: {exc}", file=sys.stderr)
        return 2
    DOC.write_text(render(document))
    print(f"[bench] wrote {DOC.relative_to(ROOT)} and {PLOTS.relative_to(ROOT)}/*.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
