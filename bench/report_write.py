"""The page's sections for the write scenarios: publish, update, no-op re-save, lock hold."""

from __future__ import annotations

from bench.formatting import (
    DASH,
    TIMES,
    Json,
    errorbar,
    figure,
    fmt_bytes,
    fmt_ratio,
    fmt_spread,
    fmt_time,
    ordered,
    pyplot,
    references_header,
    table,
)
from bench.goals import lock_checks, render
from bench.sections import Section

STAGE_ORDER = (
    "validate, hash, scan",
    "head, claim",
    "upload",
    "begin, lock",
    "locked transaction",
    "reply",
)
PHASE_ORDER = (
    "publish.checked",
    "publish.version_rows",
    "publish.head_moved",
    "publish.before_commit",
    "publish.committed",
)


def section_publish(data: Json) -> str:
    comparisons = data["comparisons"]
    refs = references_header(comparisons)
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
        fig, axes = pyplot().subplots(
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
        stages = ordered(list(comparisons[0]["stages"]), STAGE_ORDER)
        out.append(
            "\n**Where the time goes** (median per stage, instrumented with failpoints; the "
            "stages follow each other and add up to the write). `S3 requests`: HTTP requests "
            "the store sent per write (counted, not timed):\n\n"
        )
        rows = [
            [
                c["case"]["backend"],
                f"{c['case']['files']} {TIMES} {fmt_bytes(c['case']['file_size'])}",
                fmt_time(c["subject"]["median"]),
                *[fmt_time(c["stages"][stage]["median"]) for stage in stages],
                _median_count(c.get("store_requests")),
            ]
            for c in comparisons
        ]
        out.append(table(["backend", "package", "whole write", *stages, "S3 requests"], rows))
    return "".join(out)


def _median_count(values: list[int] | None) -> str:
    if not values or not any(values):
        return DASH
    return str(sorted(values)[len(values) // 2])


def section_update(data: Json) -> str:
    comparisons = data["comparisons"]
    refs = references_header(comparisons)
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
    refs = references_header(comparisons)
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


def _reference(comparison: Json, name: str) -> list[str]:
    # Runs before a reference was added have no such column.
    reference = comparison["references"].get(name)
    if reference is None:
        return [DASH, DASH]
    return [fmt_spread(reference), fmt_ratio(comparison["ratios"][name])]


def section_lock(data: Json) -> str:
    comparisons = data["comparisons"]
    phase_names = ordered(list(comparisons[0]["phases"]), PHASE_ORDER) if comparisons else []
    rows = [
        [
            c["case"]["backend"],
            f"{c['case']['files']} {TIMES} {fmt_bytes(c['case']['file_size'])}",
            fmt_spread(c["subject"]),
            fmt_spread(c["references"]["empty locked transaction"]),
            fmt_ratio(c["ratios"]["empty locked transaction"]),
            *_reference(c, "durable locked transaction"),
            *_reference(c, "CAS transaction"),
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
        "durable locked transaction",
        "÷ durable",
        "CAS transaction",
        "÷ CAS",
        "whole publish",
        *[f"→ {p.removeprefix('publish.')}" for p in phase_names],
    ]
    out = [table(header, rows), "\n"]
    out.append("**Targets of issue 14** (10 files):\n\n")
    out.append(render(lock_checks(data)))
    out.append("\n")
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
        _fig, (left, right) = pyplot().subplots(1, 2, figsize=(12, 4.2))
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


COST_PHASES = ("read", "claim", "upload", "publish", "reply")


def _counted(phase: Json | None) -> str:
    if not phase:
        return DASH
    out = f"{phase['statements']} / {phase['transactions']}"
    return out + (f" / {phase['commits']}" if "commits" in phase else "")


def _owner_count(backend: str, phases: Json) -> int:
    """Statements as the write path's owner counted them: SQLite's BEGINs included."""
    statements = sum(int(v["statements"]) for v in phases.values())
    if backend.startswith("sqlite"):
        statements += sum(int(v["transactions"]) for v in phases.values())
    return statements


def section_cost(data: Json) -> str:
    comparisons = data["comparisons"]
    out = ["**Client CPU per write** (process time over the writes of a round ÷ writes):\n\n"]
    rows = [
        [
            c["case"]["backend"],
            c["case"]["change"],
            fmt_spread(c["subject"]),
            fmt_spread(c["references"]["floor"]),
            fmt_ratio(c["ratios"]["floor"]),
            fmt_time(c["wall"]["median"]),
        ]
        for c in comparisons
    ]
    out.append(
        table(
            ["backend", "change", "client CPU / write", "floor CPU", "÷ floor", "wall / write"],
            rows,
        )
    )
    before = data.get("before", {})
    out.append(
        "\n**Statements per write, by phase** (statements / transactions / commits; BEGIN and "
        f"COMMIT are not statements here). Before: revision `{before.get('revision', '?')}`, "
        "the same count.\n\n"
    )
    rows = []
    owner = []
    counted = data.get("statements", {})
    # In the order the scenario ran them (the JSON's keys are sorted).
    order = [c["case"] for c in comparisons]
    names = [n for n in dict.fromkeys(c["change"] for c in order) if n]
    for backend in (b for b in dict.fromkeys(c["backend"] for c in order) if b in counted):
        changes = counted[backend]
        was = before.get("phases", {}).get(backend, {})
        first = changes[names[0]]["phases"]
        for phase in COST_PHASES:
            if phase not in first and phase not in was:
                continue
            rows.append(
                [
                    backend,
                    phase,
                    _counted(was.get(phase)),
                    *[_counted(changes[n]["phases"].get(phase)) for n in names],
                    ", ".join(f"{k} {v}" for k, v in first.get(phase, {}).get("kinds", {}).items()),
                ]
            )
        totals = [
            {
                key: sum(v[key] for v in changes[n]["phases"].values())
                for key in ("statements", "transactions", "commits")
            }
            for n in names
        ]
        was_total = {
            key: sum(v[key] for v in was.values()) for key in ("statements", "transactions")
        }
        rows.append(
            [
                backend,
                "**all**",
                _counted(was_total) if was else DASH,
                *[_counted(t) for t in totals],
                ""
                if all(changes[n]["same_every_write"] for n in names)
                else "varied between writes",
            ]
        )
        owner_before = before.get("owner_totals", {}).get(backend)
        owner.append(
            f"{backend} {owner_before} → {_owner_count(backend, first)}"
            if owner_before
            else f"{backend} {_owner_count(backend, first)}"
        )
    if rows:
        out.append(
            table(
                [
                    "backend",
                    "phase",
                    "before (edges)",
                    *names,
                    f"statement kinds ({names[0] if names else ''})",
                ],
                rows,
            )
        )
        out.append(
            "\nCounted as the write path's owner counted them (SQLite's BEGINs as statements, "
            f"before → this run): {'; '.join(owner)}.\n"
        )
    return "".join(out)


SECTIONS: dict[str, Section] = {
    "publish": Section(
        section_publish,
        (
            "A new package of F files of one size, through `write_package` (warm process). "
            "References in the same loop: `git add -A && git commit` of the same tree "
            "(fsync on), a naive writer (one file at a time, fsync each), the floor (the "
            "same puts in parallel plus one empty transaction taking the workspace lock), and "
            "the checked floor: the floor plus what a write cannot skip before it stores "
            "anything, hashing every file and the content check of every file "
            "(`bench/references.py::checked_floor`)."
        ),
    ),
    "update": Section(
        section_update,
        (
            "Change one 16 KiB file of a package of 1, 10 or 100 files (compare-and-swap on the "
            "head). References: commit the one changed file in git; write the one file with "
            "fsync; the floor (one put + the empty locked transaction). The cost must not grow "
            "with the package."
        ),
    ),
    "noop": Section(
        section_noop,
        (
            "Re-save the head's exact package (100 files of 16 KiB). It must upload nothing and "
            "create no version (checked: the run fails otherwise). References: `git add -A && "
            "git commit` on an unchanged tree, the naive writer (which rewrites everything), and "
            "the empty locked transaction."
        ),
    ),
    "lock": Section(
        section_lock,
        (
            "Time the workspace lock is held per write (instrumented with failpoints: from "
            "`publish.locked` to `publish.committed`, the commit included), for 10 files of "
            "growing size. References: an empty transaction that takes the same lock; a "
            "durable one (the lock, one row, a commit that waits for the log's flush, as a "
            "publish's does); and the compare-and-swap transaction issue 14 names as the "
            "yardstick (the lock, a head read, its compare-and-swap, ten rows in one insert, "
            "a durable commit: `bench/references.py::cas_transaction`); all three are timed "
            "whole, from checkout to commit. The sizes take "
            "turns (one write of each size per round), so drift over the run is shared. Must "
            "stay flat. The `→` columns break the hold down by the failpoint each phase ends at."
        ),
    ),
    "cost": Section(
        section_cost,
        (
            "One update of an existing skill (10 files of 4 KiB, compare-and-swap on the "
            "head, sources given), on each database with a local store, in one process. "
            "Client CPU: `time.process_time()` over N writes in a row after a warm-up, with "
            "one file changed and with every file changed; it counts every thread of the "
            "process, so on SQLite the database engine too. Reference in the same round: the "
            "floor's CPU (the same puts and one empty locked transaction). Statements: a "
            "`before_cursor_execute` listener on one write, failpoints naming the phase "
            "(`read` until `write.checked`, `claim` until `write.claimed`, `upload` until "
            "`write.uploaded`, `publish` until `publish.committed`); transactions and commits "
            "from the engine's `begin` and `commit` events."
        ),
    ),
}
