"""The page's sections for concurrency, scale, reads, hashing and the profile."""

from __future__ import annotations

from bench.formatting import (
    DASH,
    TIMES,
    Json,
    errorbar,
    figure,
    fmt_bytes,
    fmt_rate,
    fmt_ratio,
    fmt_spread,
    fmt_time,
    pyplot,
    references_header,
    table,
)
from bench.sections import Section


def _runner(c: Json) -> str:
    # Results from before the tasks runner ran every writer as a process.
    return str(c["case"].get("runner", "processes"))


HOT_MODES = ("same workspace, CAS", "same workspace, CAS with retry")


def _hot_skill(comparisons: list[Json]) -> str:
    """Raw compare-and-swap and `write_with_retry` side by side, at the most writers."""
    most = max((c["case"]["writers"] for c in comparisons), default=0)
    rows = [
        [
            _runner(c),
            "retried with backoff" if c["case"]["mode"] == HOT_MODES[1] else "raw, retried at once",
            fmt_rate(c["subject"]["median"]),
            str(c["conflicts"]),
            f"{c['conflicts'] / max(c['writes'], 1):.2f}",
            fmt_time(c["latency"]["median"]),
            fmt_time(c["latency"]["p99"]),
            str(c.get("gave_up", 0)),
        ]
        for c in comparisons
        if c["case"]["mode"] in HOT_MODES and c["case"]["writers"] == most and most > 1
    ]
    if not rows:
        return ""
    return (
        f"\n**One hot skill, {most} writers, compare-and-swap:**\n\n"
        + table(
            [
                "runner",
                "conflict handling",
                "writes/s",
                "conflicts",
                "conflicts / write",
                "p50",
                "p99",
                "gave up",
            ],
            rows,
        )
        + "\n"
    )


def section_concurrency(data: Json) -> str:
    comparisons = data["comparisons"]
    rows = []
    for c in comparisons:
        ratios = c["ratios"]
        rows.append(
            [
                c["case"]["mode"],
                _runner(c) if c["case"]["writers"] > 1 else "(one process)",
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
                str(c.get("gave_up", 0)),
                str(c["writes"]),
            ]
        )
    header = [
        "mode",
        "runner",
        "writers",
        "writes/s",
        "÷ 1 writer",
        "÷ lock only",
        "p50",
        "p99",
        "client CPU / write",
        "conflicts",
        "gave up",
        "writes",
    ]
    out = [table(header, rows), "\n", _hot_skill(comparisons)]

    def draw() -> None:
        from matplotlib.ticker import ScalarFormatter  # noqa: PLC0415 - see `pyplot`

        _fig, (left, right) = pyplot().subplots(1, 2, figsize=(12, 4.6))
        single = {c["case"]["mode"]: c for c in comparisons if c["case"]["writers"] == 1}
        for runner in dict.fromkeys(_runner(c) for c in comparisons):
            style = "-" if runner == "processes" else ":"
            modes = dict.fromkeys(c["case"]["mode"] for c in comparisons)
            for number, mode in enumerate(modes):
                color = f"C{number}"  # one colour per mode, one line style per runner
                rows = [
                    c
                    for c in comparisons
                    if c["case"]["mode"] == mode
                    and _runner(c) == runner
                    and c["case"]["writers"] > 1
                ]
                if mode in single:
                    rows.insert(0, single[mode])  # one writer: the start of both runners
                if len(rows) < 2:
                    continue
                xs = [c["case"]["writers"] for c in rows]
                label = f"{mode}, {runner}"
                if mode != "lock only":
                    errorbar(
                        left, xs, [c["subject"] for c in rows], label, linestyle=style, color=color
                    )
                right.plot(
                    xs,
                    [c["latency"]["p99"] * 1e3 for c in rows],
                    marker="x",
                    linestyle=style,
                    color=color,
                    label=f"p99 {label}",
                )
        left.set_xscale("log", base=2)
        right.set_xscale("log", base=2)
        for ax in (left, right):
            ax.set_xticks(sorted({c["case"]["writers"] for c in comparisons}))
            ax.get_xaxis().set_major_formatter(ScalarFormatter())
        left.set_xlabel("writers (solid: processes, dotted: tasks of one process)")
        left.set_ylabel("committed writes per second")
        left.set_title("Throughput against concurrency (PostgreSQL)")
        left.set_ylim(bottom=0)
        left.legend(fontsize=6)
        right.set_xlabel("writers")
        right.set_ylabel("p99 latency per write (ms)")
        right.set_yscale("log")
        right.set_title("Tail latency against concurrency")
        right.legend(fontsize=5)

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
        fig, axes = pyplot().subplots(
            1, len(backends), figsize=(6 * len(backends), 4.2), squeeze=False
        )
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
    refs = references_header(comparisons)
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
    refs = references_header(comparisons)
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


SECTIONS: dict[str, Section] = {
    "concurrency": Section(
        section_concurrency,
        (
            "1, 2, 4, 8 writers on one PostgreSQL database (local blob store), all starting "
            "on a barrier; each write changes one file of a 10-file package. The writers run "
            "as processes (one registry each) and as tasks of one process (one registry, one "
            "pool, one event loop); one writer is one process with one task, the `1 writer` "
            "reference of both. Modes: the same skill in one workspace (`expected_head=ANY`), "
            "one skill per writer in the shared workspace (`distinct skills`), one skill per "
            "writer in distinct workspaces, the same skill with compare-and-swap (conflicts "
            "counted, retried at once), the same skill through `write_with_retry` (re-read, "
            "re-apply, jittered backoff; conflicts are the attempts beyond the first, `gave "
            "up` the writes that ran out of attempts), and the empty locked transaction "
            "alone (the lock's own ceiling). Client CPU / write: the writers' processes' "
            "CPU time over the committed writes."
        ),
    ),
    "scale": Section(
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
    "read": Section(
        section_read,
        (
            "Read a pinned (non-head) version of 100 files, every digest verified, against "
            "reading the same files from a folder; the floor fetches the same blobs straight "
            "from the store, in parallel."
        ),
    ),
    "hashing": Section(
        section_hashing,
        (
            "`build_manifest` (one BLAKE3 per file, the canonical encoding and its hash) "
            "against `blake3` single-threaded on the same buffers: per file, and as one buffer."
        ),
    ),
    "profile": Section(
        section_profile,
        (
            "pyinstrument on the publish path (SQLite + local store). Self time: where the "
            "samples landed; `[await]` is waiting on I/O or a worker thread."
        ),
    ),
}
