"""The page's sections for the write scenarios: publish, update, no-op re-save, lock hold."""

from __future__ import annotations

import matplotlib.pyplot as plt

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
    references_header,
    table,
)
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


SECTIONS: dict[str, Section] = {
    "publish": Section(
        section_publish,
        (
            "A new package of F files of one size, through `write_package` (warm process). "
            "References in the same loop: `git add -A && git commit` of the same tree "
            "(fsync on), a naive writer (one file at a time, fsync each), and the floor (the "
            "same puts in parallel plus one empty transaction taking the workspace lock)."
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
            "growing size. Reference: an empty transaction that takes the same lock. Must stay "
            "flat. The `→` columns break the hold down by the failpoint each phase ends at."
        ),
    ),
}
