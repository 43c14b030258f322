"""The page's sections for materialisation and storage: reconcile, garbage collection."""

from __future__ import annotations

from bench.formatting import (
    DASH,
    Json,
    errorbar,
    figure,
    fmt_bytes,
    fmt_count,
    fmt_ratio,
    fmt_spread,
    fmt_time,
    pyplot,
    table,
)
from bench.sections import Section


def _median(values: list[float] | None) -> str:
    if not values:
        return DASH
    ordered = sorted(values)
    return fmt_count(ordered[len(ordered) // 2])


def _plotted(comparison: Json) -> Json:
    """The reference a case is plotted against: the floor where there is one."""
    references: dict[str, Json] = comparison["references"]
    return references.get("floor") or next(iter(references.values()))


def section_reconcile(data: Json) -> str:
    comparisons = data["comparisons"]
    rows = []
    for c in comparisons:
        case = c["case"]
        skills = case["skills"]
        for index, reference in enumerate(c["references"]):
            own = [
                case["case"],
                fmt_spread(c["subject"]),
                fmt_time(c["subject"]["median"] / skills),
            ]
            counts = [_median(c.get("hashed")), _median(c.get("fsyncs"))]
            # Each reference's own count: `copy_fsyncs`, `durable_copy_fsyncs`.
            theirs = _median(c.get(f"{reference.replace(' ', '_')}_fsyncs"))
            rows.append(
                [
                    *(own if index == 0 else ["", "", ""]),
                    reference,
                    fmt_spread(c["references"][reference]),
                    fmt_ratio(c["ratios"][reference]),
                    *(counts if index == 0 else ["", ""]),
                    theirs,
                ]
            )
    first = comparisons[0]["case"] if comparisons else {}
    out = [
        (
            f"{fmt_count(first.get('skills', 0))} skills of {first.get('files')} files of "
            f"{fmt_bytes(first.get('file_size', 0))}, {first.get('backend')}, link mode; "
            f"seeded in {fmt_time(data.get('seeding_seconds'))}.\n\n"
        ),
        table(
            [
                "case",
                "reconcile",
                "per skill",
                "reference",
                "reference time",
                "÷ reference",
                "files hashed",
                "fsyncs",
                "reference fsyncs",
            ],
            rows,
        ),
        "\n",
    ]

    def draw() -> None:
        _fig, ax = pyplot().subplots(figsize=(8, 3.6))
        labels = [c["case"]["case"] for c in comparisons]
        xs = list(range(len(comparisons)))
        width = 0.38
        ax.bar(
            [x - width / 2 for x in xs],
            [c["subject"]["median"] for c in comparisons],
            width,
            label="reconcile",
        )
        ax.bar(
            [x + width / 2 for x in xs],
            [_plotted(c)["median"] for c in comparisons],
            width,
            label="reference (copy; walk; read + hash; floor: walk + rewrite)",
        )
        ax.set_xticks(xs, labels)
        ax.set_yscale("log")
        ax.set_ylabel("seconds (median)")
        ax.set_title("Reconcile a target of 1,000 skills, against its references")
        ax.legend(fontsize=8)

    if comparisons:
        out.append(figure("reconcile", draw, "reconcile against its references"))
    return "".join(out)


_GC_REFERENCES = ("listing", "count", "orphan query", "floor")


def section_gc(data: Json) -> str:
    comparisons = data["comparisons"]
    rows = []
    for c in comparisons:
        case = c["case"]
        rows.append(
            [
                case["backend"],
                fmt_count(case["blobs"]),
                fmt_spread(c["subject"]),
                *[fmt_spread(c["references"][r]) for r in _GC_REFERENCES],
                *[fmt_ratio(c["ratios"][r]) for r in ("listing", "floor")],
                fmt_count(c["blobs_per_second"]),
                fmt_count(c["listing_per_second"]),
                fmt_bytes(c["tracemalloc_peak_bytes"]),
            ]
        )
    out = [
        table(
            [
                "backend",
                "blobs",
                "gc run",
                *_GC_REFERENCES,
                "÷ listing",
                "÷ floor",
                "blobs/s",
                "listed/s",
                "heap peak",
            ],
            rows,
        ),
        "\n",
    ]
    growth = data.get("growth", {})
    if growth:
        out.append(
            "From the smallest store to the largest: "
            + "; ".join(
                f"{backend}, {fmt_count(g['smallest'])} {DASH} {fmt_count(g['largest'])} blobs "
                f"({fmt_ratio(g['largest'] / g['smallest'])} the blobs): time "
                f"{fmt_ratio(g['time'])}, heap peak {fmt_ratio(g['tracemalloc_peak'])}"
                for backend, g in growth.items()
            )
            + ".\n\n"
        )

    def draw() -> None:
        _fig, (left, right) = pyplot().subplots(1, 2, figsize=(12, 4.2))
        for backend in dict.fromkeys(c["case"]["backend"] for c in comparisons):
            rows = sorted(
                (c for c in comparisons if c["case"]["backend"] == backend),
                key=lambda c: c["case"]["blobs"],
            )
            xs = [c["case"]["blobs"] for c in rows]
            errorbar(left, xs, [c["subject"] for c in rows], f"gc, {backend}")
            errorbar(
                left,
                xs,
                [c["references"]["floor"] for c in rows],
                f"floor (listing + orphan query), {backend}",
                linestyle="--",
            )
            right.plot(
                xs,
                [c["tracemalloc_peak_bytes"] / 2**20 for c in rows],
                marker="o",
                label=f"heap peak (tracemalloc), {backend}",
            )
        for ax in (left, right):
            ax.set_xscale("log")
            ax.set_xlabel("blobs in the store")
            ax.legend(fontsize=7)
        left.set_yscale("log")
        left.set_ylabel("seconds per run")
        left.set_title("GC run against store size")
        right.set_ylim(bottom=0)
        right.set_ylabel("MiB")
        right.set_title("Memory of a GC run against store size")

    if comparisons:
        out.append(figure("gc", draw, "GC time and memory against store size"))
    return "".join(out)


SECTIONS: dict[str, Section] = {
    "reconcile": Section(
        section_reconcile,
        (
            "A scope of 1,000 skills (seeded in bulk: objects in the store, rows as committed "
            "writes leave them, checked by `fsck`) reconciled into a target in link mode. "
            "`fill`: the first reconcile of an empty target, against copying the same files "
            "one at a time with fsync (`copy`), and against copying them with the durability "
            "a materialised skill has (`durable copy`: per skill, a staging folder of fsynced "
            "files and directories renamed into place and its parent fsynced, one skill after "
            "the other). Reconcile materialises 8 skills at a time (`SKILLS_AT_ONCE`); both "
            "copies go one file at a time. `no drift`: reconcile again (the stat cache answers, "
            "nothing is hashed: checked), against `os.walk` + `lstat` of the target, the floor "
            "of looking. `verify`: rehash every file, against reading and hashing them. "
            "`1% drift`: one file of 10 skills edited on disk; reconcile finds exactly those "
            "and restores them from the blob store (checked), against a naive writer rewriting "
            "those 10 skills with fsync, and against the floor: that plus the walk. `fsyncs` "
            "counts `os.fsync` calls per run (SQLite's own are not seen)."
        ),
    ),
    "gc": Section(
        section_gc,
        (
            "A full GC run over 10,000 and 100,000 blobs (99% referenced by 100-file "
            "packages, 1% orphaned rows, 0.1% more objects without a row, all past the grace "
            "period; the run must reclaim exactly those), on SQLite and PostgreSQL with a "
            "local store. References from the same repetition: the store's listing alone, "
            "`SELECT count(*), sum(size) FROM blobs`, the orphan question in one statement "
            "(rows no manifest entry names), and the floor (listing + orphan query). Memory: "
            "`tracemalloc`'s peak during the first (untimed) run; bounded means about the same "
            "at both sizes."
        ),
    ),
}
