"""Regenerate `docs/benchmarks.md` and its plots (`docs/benchmarks/*.png`) from the results.

    python -m bench.report [bench/results/latest.json]

Everything in the page comes from the JSON except `bench/findings.md` (the analysis, written
by hand after a run and included as it is).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib as mpl

mpl.use("Agg")
import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
PLOTS = ROOT / "docs" / "benchmarks"
FINDINGS = ROOT / "bench" / "findings.md"
DEFAULT_RESULTS = ROOT / "bench" / "results" / "latest.json"

Json = dict[str, Any]
# Typography of the tables, spelled as escapes so the source stays plain ASCII.
TIMES = "\u00d7"
DASH = "\u2013"


# ---------------------------------------------------------------- formatting


def fmt_time(seconds: float) -> str:
    if seconds is None or math.isnan(seconds):
        return "n/a"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def fmt_spread(s: Json, fmt: Callable[[float], str] = fmt_time) -> str:
    return f"{fmt(s['median'])} ({fmt(s['p10'])}{DASH}{fmt(s['p90'])})"


def fmt_ratio(value: float) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value:.2f}{TIMES}" if value < 10 else f"{value:.0f}{TIMES}"


def fmt_bytes(size: int) -> str:
    if size >= 1024 * 1024:
        return f"{size / 1024 / 1024:g} MiB"
    if size >= 1024:
        return f"{size / 1024:g} KiB"
    return f"{size} B"


def fmt_rate(value: float) -> str:
    return f"{value:.1f}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def figure(name: str, draw: Callable[[], None], caption: str) -> str:
    PLOTS.mkdir(parents=True, exist_ok=True)
    draw()
    plt.tight_layout()
    plt.savefig(PLOTS / f"{name}.png", dpi=90)
    plt.close("all")
    return f"![{caption}](benchmarks/{name}.png)\n"


def errorbar(ax: Any, xs: list[float], stats: list[Json], label: str, **kw: Any) -> None:
    medians = [s["median"] for s in stats]
    low = [s["median"] - s["p10"] for s in stats]
    high = [s["p90"] - s["median"] for s in stats]
    ax.errorbar(xs, medians, yerr=[low, high], label=label, marker="o", capsize=3, **kw)


# ---------------------------------------------------------------- sections


# References in the order the issue names them; any other after these.
_REFERENCE_ORDER = ("git", "naive", "floor", "folder")
_STAGE_ORDER = (
    "validate, hash, scan",
    "head, claim",
    "upload",
    "begin, lock",
    "locked transaction",
    "reply",
)
_PHASE_ORDER = (
    "publish.checked",
    "publish.version_rows",
    "publish.head_moved",
    "publish.before_commit",
    "publish.committed",
)


def _ordered(names: Sequence[str], order: Sequence[str]) -> list[str]:
    return sorted(names, key=lambda n: order.index(n) if n in order else len(order))


def _references_header(comparisons: list[Json]) -> list[str]:
    return _ordered(list(comparisons[0]["references"]), _REFERENCE_ORDER) if comparisons else []


def section_publish(data: Json) -> str:
    comparisons = data["comparisons"]
    refs = _references_header(comparisons)
    out = []
    for backend in sorted({c["case"]["backend"] for c in comparisons}, reverse=True):
        rows = []
        for c in (c for c in comparisons if c["case"]["backend"] == backend):
            case = c["case"]
            rows.append(
                [
                    str(case["files"]),
                    fmt_bytes(case["file_size"]),
                    fmt_spread(c["subject"]),
                    *[fmt_spread(c["references"][r]) for r in refs],
                    *[fmt_ratio(c["ratios"][r]) for r in refs],
                ]
            )
        out.append(f"**{backend}**\n\n")
        out.append(
            table(
                ["files", "file size", "registry", *refs, *[f"÷ {r}" for r in refs]],
                rows,
            )
        )
        out.append("\n")

    def draw() -> None:
        backends = sorted({c["case"]["backend"] for c in comparisons}, reverse=True)
        counts = sorted({c["case"]["files"] for c in comparisons})
        fig, axes = plt.subplots(
            len(backends),
            len(counts),
            figsize=(4.2 * len(counts), 3.4 * len(backends)),
            squeeze=False,
            sharey=True,
        )
        for row, backend in enumerate(backends):
            for col, count in enumerate(counts):
                ax = axes[row][col]
                rows = sorted(
                    (
                        c
                        for c in comparisons
                        if c["case"]["backend"] == backend and c["case"]["files"] == count
                    ),
                    key=lambda c: c["case"]["file_size"],
                )
                xs = [c["case"]["file_size"] for c in rows]
                errorbar(ax, xs, [c["subject"] for c in rows], "registry")
                for ref in refs:
                    errorbar(ax, xs, [c["references"][ref] for c in rows], ref, linestyle="--")
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlabel("file size (bytes)")
                ax.set_title(f"{backend}, {count} file{'s' if count > 1 else ''}", fontsize=10)
                if col == 0:
                    ax.set_ylabel("seconds per publish")
        axes[0][0].legend(fontsize=8)
        fig.suptitle("Publish a new package: cost against file size and file count")

    out.append(figure("publish", draw, "publish cost against package size"))
    if comparisons and "stages" in comparisons[0]:
        stages = _ordered(list(comparisons[0]["stages"]), _STAGE_ORDER)
        out.append(
            "\n**Where the time goes** (median per stage, instrumented with failpoints; the "
            "stages follow each other and add up to the write):\n\n"
        )
        rows = [
            [
                c["case"]["backend"],
                f"{c['case']['files']} {TIMES} {fmt_bytes(c['case']['file_size'])}",
                fmt_time(c["subject"]["median"]),
                *[fmt_time(c["stages"][stage]["median"]) for stage in stages],
            ]
            for c in comparisons
        ]
        out.append(table(["backend", "package", "whole write", *stages], rows))
    return "".join(out)


def section_update(data: Json) -> str:
    comparisons = data["comparisons"]
    refs = _references_header(comparisons)
    rows = []
    for c in comparisons:
        smallest = next(x for x in comparisons if x["case"]["backend"] == c["case"]["backend"])
        growth = c["subject"]["median"] / smallest["subject"]["median"]
        rows.append(
            [
                c["case"]["backend"],
                str(c["case"]["files"]),
                fmt_spread(c["subject"]),
                *[fmt_spread(c["references"][r]) for r in refs],
                *[fmt_ratio(c["ratios"][r]) for r in refs],
                fmt_ratio(growth),
                str(sorted(set(c.get("uploaded", [])))),
            ]
        )
    header = [
        "backend",
        "files in package",
        "registry",
        *refs,
        *[f"÷ {r}" for r in refs],
        "÷ smallest package",
        "blobs uploaded",
    ]
    return table(header, rows)


def section_noop(data: Json) -> str:
    comparisons = data["comparisons"]
    refs = _references_header(comparisons)
    rows = [
        [
            c["case"]["backend"],
            f"{c['case']['files']} {TIMES} {fmt_bytes(c['case']['file_size'])}",
            fmt_spread(c["subject"]),
            *[fmt_spread(c["references"][r]) for r in refs],
            *[fmt_ratio(c["ratios"][r]) for r in refs],
            str(c["puts"]),
            str(c["new_versions"]),
        ]
        for c in comparisons
    ]
    header = [
        "backend",
        "package",
        "registry",
        *refs,
        *[f"÷ {r}" for r in refs],
        "blob puts",
        "new versions",
    ]
    return table(header, rows)


def section_lock(data: Json) -> str:
    comparisons = data["comparisons"]
    phase_names = _ordered(list(comparisons[0]["phases"]), _PHASE_ORDER) if comparisons else []
    rows = [
        [
            c["case"]["backend"],
            f"{c['case']['files']} {TIMES} {fmt_bytes(c['case']['file_size'])}",
            fmt_spread(c["subject"]),
            fmt_spread(c["references"]["empty locked transaction"]),
            fmt_ratio(c["ratios"]["empty locked transaction"]),
            fmt_time(c["publish_total"]["median"]),
            *[fmt_time(c["phases"][p]["median"]) for p in phase_names],
        ]
        for c in comparisons
    ]
    header = [
        "backend",
        "package",
        "lock held",
        "empty locked transaction",
        "÷ empty",
        "whole publish",
        *[f"→ {p.removeprefix('publish.')}" for p in phase_names],
    ]
    out = [table(header, rows), "\n"]
    flat = data.get("flatness", {})
    if flat:
        out.append(
            "Flatness (median hold at the largest file size ÷ at the smallest): "
            + ", ".join(
                f"{k}: {fmt_ratio(v['ratio'])} ({fmt_bytes(v['largest'])} vs "
                f"{fmt_bytes(v['smallest'])})"
                for k, v in flat.items()
            )
            + ".\n\n"
        )
    dist = data.get("distributions", {})
    out.append(
        table(
            ["backend", "writes", "median", "p10", "p90", "p99", "max"],
            [
                [
                    k,
                    str(v["stats"]["n"]),
                    *[fmt_time(v["stats"][q]) for q in ("median", "p10", "p90", "p99", "max")],
                ]
                for k, v in dist.items()
            ],
        )
    )
    out.append("\n")

    def draw() -> None:
        _fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
        for backend in sorted({c["case"]["backend"] for c in comparisons}, reverse=True):
            rows = [c for c in comparisons if c["case"]["backend"] == backend]
            xs = [c["case"]["file_size"] for c in rows]
            errorbar(left, xs, [c["subject"] for c in rows], f"lock held, {backend}")
            errorbar(
                left,
                xs,
                [c["references"]["empty locked transaction"] for c in rows],
                f"empty locked transaction, {backend}",
                linestyle="--",
            )
        left.set_xscale("log")
        left.set_ylim(bottom=0)
        left.set_xlabel("file size (bytes), 10 files")
        left.set_ylabel("seconds")
        left.set_title("Lock hold time against file size")
        left.legend(fontsize=7)
        for backend, v in dist.items():
            samples = [x * 1e3 for x in v["samples"]]
            right.hist(samples, bins=30, alpha=0.6, label=backend)
        right.set_xlabel("lock held (ms)")
        right.set_ylabel("writes")
        right.set_title("Distribution of lock hold times")
        right.legend(fontsize=8)

    out.append(figure("lock", draw, "lock hold time"))
    return "".join(out)


def section_concurrency(data: Json) -> str:
    comparisons = data["comparisons"]
    rows = []
    for c in comparisons:
        ratios = c["ratios"]
        rows.append(
            [
                c["case"]["mode"],
                str(c["case"]["writers"]),
                fmt_spread(c["subject"], fmt_rate),
                fmt_ratio(ratios["1 writer"]),
                fmt_ratio(ratios["lock only"]) if "lock only" in ratios else "",
                fmt_time(c["latency"]["median"]),
                fmt_time(c["latency"]["p99"]),
                fmt_time(c["client_cpu_per_write"]["median"])
                if "client_cpu_per_write" in c
                else "",
                str(c["conflicts"]),
                str(c["writes"]),
            ]
        )
    header = [
        "mode",
        "writers",
        "writes/s",
        "÷ 1 writer",
        "÷ lock only",
        "p50",
        "p99",
        "client CPU / write",
        "conflicts",
        "writes",
    ]
    out = [table(header, rows), "\n"]

    def draw() -> None:
        _fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
        for mode in dict.fromkeys(c["case"]["mode"] for c in comparisons):
            rows = [c for c in comparisons if c["case"]["mode"] == mode]
            xs = [c["case"]["writers"] for c in rows]
            if mode != "lock only":
                errorbar(left, xs, [c["subject"] for c in rows], mode)
            right.plot(
                xs, [c["latency"]["median"] * 1e3 for c in rows], marker="o", label=f"p50 {mode}"
            )
            right.plot(
                xs,
                [c["latency"]["p99"] * 1e3 for c in rows],
                marker="x",
                linestyle="--",
                label=f"p99 {mode}",
            )
        left.set_xscale("log", base=2)
        right.set_xscale("log", base=2)
        for ax in (left, right):
            ax.set_xticks(sorted({c["case"]["writers"] for c in comparisons}))
            ax.get_xaxis().set_major_formatter(mpl.ticker.ScalarFormatter())
        left.set_xlabel("writer processes")
        left.set_ylabel("committed writes per second")
        left.set_title("Throughput against concurrency (PostgreSQL)")
        left.set_ylim(bottom=0)
        left.legend(fontsize=8)
        right.set_xlabel("writer processes")
        right.set_ylabel("latency per write (ms)")
        right.set_yscale("log")
        right.set_title("Latency against concurrency")
        right.legend(fontsize=6)

    out.append(figure("concurrency", draw, "throughput and latency against concurrency"))
    return "".join(out)


def section_scale(data: Json) -> str:
    comparisons = data["comparisons"]
    levels = sorted({c["case"]["skills"] for c in comparisons})
    out = []
    rows = []
    for backend in dict.fromkeys(c["case"]["backend"] for c in comparisons):
        for op in dict.fromkeys(c["case"]["operation"] for c in comparisons):
            cells = [backend, op]
            for level in levels:
                c = next(
                    x
                    for x in comparisons
                    if x["case"]["backend"] == backend
                    and x["case"]["operation"] == op
                    and x["case"]["skills"] == level
                )
                ratio = next(iter(c["ratios"].values()))
                cells.append(
                    fmt_spread(c["subject"])
                    + ("" if level == levels[0] else f" **{fmt_ratio(ratio)}**")
                )
            rows.append(cells)
    out.append(table(["backend", "operation", *[f"{n:,} skills" for n in levels]], rows))
    out.append(f"\nBold: the median's ratio to the same operation with {levels[0]} skills.\n\n")

    def draw() -> None:
        backends = list(dict.fromkeys(c["case"]["backend"] for c in comparisons))
        fig, axes = plt.subplots(1, len(backends), figsize=(6 * len(backends), 4.2), squeeze=False)
        for ax, backend in zip(axes[0], backends, strict=True):
            for op in dict.fromkeys(c["case"]["operation"] for c in comparisons):
                rows = [
                    c
                    for c in comparisons
                    if c["case"]["backend"] == backend and c["case"]["operation"] == op
                ]
                errorbar(ax, [c["case"]["skills"] for c in rows], [c["subject"] for c in rows], op)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("skills in the scope")
            ax.set_ylabel("seconds")
            ax.set_title(backend)
            ax.legend(fontsize=8)
        fig.suptitle("Latency against the number of skills in a scope")

    out.append(figure("scale", draw, "latency against skills in a scope"))
    rows_by_table = data.get("table_rows", {})
    for backend, plans in data.get("plans", {}).items():
        out.append(f"\n**Query plans of the write path, {backend}**")
        counts = rows_by_table.get(backend)
        if counts:
            out.append(" (rows: " + ", ".join(f"{t} {n:,}" for t, n in counts.items()) + ")")
        out.append("\n\n")
        plan_rows = []
        for plan in plans:
            statement = plan["statement"]
            short = statement if len(statement) <= 90 else statement[:87] + "…"
            plan_rows.append(
                [
                    f"`{short.replace('|', '/')}`",
                    ", ".join(dict.fromkeys(plan["indexes"])) or DASH,
                    ", ".join(dict.fromkeys(plan["full_scans"])) or DASH,
                    "yes" if plan.get("indexable") else "**no**",
                ]
            )
        out.append(
            table(
                ["statement", "indexes used", "full scans (as planned)", "index-served"], plan_rows
            )
        )
    return "".join(out)


def section_read(data: Json) -> str:
    comparisons = data["comparisons"]
    refs = _references_header(comparisons)
    rows = [
        [
            c["case"]["backend"],
            f"{c['case']['files']} {TIMES} {fmt_bytes(c['case']['file_size'])}",
            fmt_spread(c["subject"]),
            *[fmt_spread(c["references"][r]) for r in refs],
            *[fmt_ratio(c["ratios"][r]) for r in refs],
        ]
        for c in comparisons
    ]
    return table(["backend", "package", "registry", *refs, *[f"÷ {r}" for r in refs]], rows)


def section_hashing(data: Json) -> str:
    comparisons = data["comparisons"]
    refs = _references_header(comparisons)
    rows = []
    for c in comparisons:
        rates = c["throughput_mb_s"]
        rows.append(
            [
                f"{c['case']['files']} {TIMES} {fmt_bytes(c['case']['file_size'])}",
                f"{fmt_spread(c['subject'])}, {rates['build_manifest']:.0f} MB/s",
                *[f"{fmt_spread(c['references'][r])}, {rates[r]:.0f} MB/s" for r in refs],
                *[fmt_ratio(c["ratios"][r]) for r in refs],
            ]
        )
    return table(["package", "build_manifest", *refs, *[f"÷ {r}" for r in refs]], rows)


def section_profile(data: Json) -> str:
    out = []
    counted = data.get("statements")
    if counted:
        out.append("**Round trips of one write** (10 files, SQLite):\n\n")
        out.append(
            table(
                ["write", "statements", "transactions", "commits"],
                [
                    [name, str(c["statements"]), str(c["transactions"]), str(c["commits"])]
                    for name, c in counted.items()
                ],
            )
        )
        out.append("\n")
    for workload in data["workloads"]:
        out.append(
            f"**{workload['name']}** (wall {fmt_time(workload['wall'])}, "
            f"sampled {fmt_time(workload['sampled'])})\n\n"
        )
        rows = [
            [f"`{r['frame']}`", fmt_time(r["seconds"]), f"{r['share']:.0%}"]
            for r in workload["top_self"][:10]
        ]
        out.append(table(["frame (self time)", "time", "share"], rows))
        out.append("\n")
        rows = [
            [f"`{r['frame']}`", fmt_time(r["seconds"]), f"{r['share']:.0%}"]
            for r in workload["top_registry_inclusive"][:8]
        ]
        out.append(table(["registry function (inclusive)", "time", "share"], rows))
        out.append("\n")
    return "".join(out)


SECTIONS: dict[str, tuple[Callable[[Json], str], str]] = {
    "publish": (
        section_publish,
        (
            "A new package of F files of one size, through `write_package` (warm process). "
            "References in the same loop: `git add -A && git commit` of the same tree "
            "(fsync on), a naive writer (one file at a time, fsync each), and the floor (the "
            "same puts in parallel plus one empty transaction taking the workspace lock)."
        ),
    ),
    "update": (
        section_update,
        (
            "Change one 16 KiB file of a package of 1, 10 or 100 files (compare-and-swap on the "
            "head). References: commit the one changed file in git; write the one file with "
            "fsync; the floor (one put + the empty locked transaction). The cost must not grow "
            "with the package."
        ),
    ),
    "noop": (
        section_noop,
        (
            "Re-save the head's exact package (100 files of 16 KiB). It must upload nothing and "
            "create no version (checked: the run fails otherwise). References: `git add -A && "
            "git commit` on an unchanged tree, the naive writer (which rewrites everything), and "
            "the empty locked transaction."
        ),
    ),
    "lock": (
        section_lock,
        (
            "Time the workspace lock is held per write (instrumented with failpoints: from "
            "`publish.locked` to `publish.committed`, the commit included), for 10 files of "
            "growing size. Reference: an empty transaction that takes the same lock. Must stay "
            "flat. The `→` columns break the hold down by the failpoint each phase ends at."
        ),
    ),
    "concurrency": (
        section_concurrency,
        (
            "1, 2, 4, 8 writer processes on one PostgreSQL database (local blob store), all "
            "starting on a barrier; each write changes one file of a 10-file package. Modes: the "
            "same skill in one workspace (`expected_head=ANY`), one skill per writer in distinct "
            "workspaces, the same skill with compare-and-swap (conflicts counted and retried), "
            "and the empty locked transaction alone (the lock's own ceiling)."
        ),
    ),
    "scale": (
        section_scale,
        (
            "Write and read latency in scopes holding 10, 1,000 and 10,000 skills (one "
            "workspace per level in the same database, measured in turn in every repetition). "
            "The write path's statements are captured during one update and one create in the "
            "largest scope and explained; on PostgreSQL a statement counts as index-served "
            "if its plan has no sequential scan once sequential scans are priced out (small "
            "tables are scanned whatever their indexes)."
        ),
    ),
    "read": (
        section_read,
        (
            "Read a pinned (non-head) version of 100 files, every digest verified, against "
            "reading the same files from a folder; the floor fetches the same blobs straight "
            "from the store, in parallel."
        ),
    ),
    "hashing": (
        section_hashing,
        (
            "`build_manifest` (one BLAKE3 per file, the canonical encoding and its hash) "
            "against `blake3` single-threaded on the same buffers: per file, and as one buffer."
        ),
    ),
    "profile": (
        section_profile,
        (
            "pyinstrument on the publish path (SQLite + local store). Self time: where the "
            "samples landed; `[await]` is waiting on I/O or a worker thread."
        ),
    ),
}

METHOD = """### How the figures are made

- **Side by side.** Inside every repetition the registry runs, then each reference, on a
  package of the same shape with its own unique content (nothing is deduplicated away);
  the first repetition of each case is a discarded warm-up (a warm process: imports done,
  pools and clients connected). Ratios are medians over medians from the same loop.
- **References.** `git add -A && git commit` in a scratch repository, with
  `core.fsync=committed` (every contender is durable) and automatic gc off; the tree is
  written before the clock starts. The naive writer writes the files one at a time into a
  fresh folder, each with fsync. The floor is the same blob puts in parallel (the
  registry's upload concurrency) into the backend's own store plus one empty transaction
  that takes the same workspace lock (`lock_workspace` in a write transaction).
- **Backends.** `sqlite+local` is the embedded default; `postgresql+s3` is PostgreSQL
  with moto's S3 server in a separate process (in the test process it would share the
  interpreter lock with the registry being measured). moto answers a request in a few
  milliseconds, much slower than a put to a local disk, so on that backend the floor
  (which pays the same requests) is the reference to read. The concurrency and scale
  runs use PostgreSQL with a local store.
- **Instrumentation** goes through the write path's failpoints (`registry/failpoints.py`):
  a `Failpoints` implementation that only reads `time.perf_counter()`, so production
  timing is unchanged.
- **Checks.** The harness fails the run if a no-op re-save uploads a blob or creates a
  version, if a pinned read returns bytes other than the folder's, or if a committed write
  does not report exactly one lock hold.
- **Tests.** `tests/benchmarks/test_harness.py` pins the statistics, the lock clock and
  the scenario registry, and runs one scenario end to end; CI runs `make bench-quick`
  (every scenario, tiny repetitions) after the test suite. No test asserts on time.
- **Adding a scenario.** Write an async function taking a `Run` and returning
  `{"comparisons": [compare(case, subject_samples, {reference: samples})]}`, decorate it
  with `@scenario(name, title)` in a `bench/` module imported by `bench/run.py`, and give
  it a section in `bench/report.py`.

"""

PENDING = {
    "reconcile": "reconcile of 1,000 skills with no drift and with 1% drift",
    "gc": "GC over 100,000 blobs",
}


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
            f"{machine['git']}, blake3 {machine['blake3']}.\n\n"
        ),
    ]
    if FINDINGS.exists():
        parts.append(FINDINGS.read_text())
        parts.append("\n")
    for number, (name, (render_section, description)) in enumerate(SECTIONS.items(), 1):
        if name not in scenarios:
            continue
        data = scenarios[name]
        parts.append(f"## {number}. {data['title']}\n\n{description}\n\n")
        parts.append(render_section(data))
        parts.append("\n")
    parts.append("## Not yet measured\n\n")
    parts.extend(
        f"- {text}: added as a scenario when that feature lands.\n" for text in PENDING.values()
    )
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    source = Path(args[0]) if args else DEFAULT_RESULTS
    document = json.loads(source.read_text())
    DOC.write_text(render(document))
    print(f"[bench] wrote {DOC.relative_to(ROOT)} and {PLOTS.relative_to(ROOT)}/*.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
