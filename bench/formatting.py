"""How the benchmark page writes numbers, tables and plots (`bench/report.py` assembles it)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PLOTS = ROOT / "docs" / "benchmarks"

Json = dict[str, Any]
# Typography of the tables, spelled as escapes so the source stays plain ASCII.
TIMES = "\u00d7"
DASH = "\u2013"
MICRO = "\u00b5"

# References in the order the issue names them; any other after these.
REFERENCE_ORDER = ("git", "naive", "floor", "checked floor", "folder")


# ---------------------------------------------------------------- numbers


def _time_unit(seconds: float) -> tuple[float, str]:
    if seconds >= 1:
        return 1.0, "s"
    if seconds >= 1e-3:
        return 1e3, "ms"
    return 1e6, f"{MICRO}s"


def _number(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def fmt_time(seconds: float | None) -> str:
    if seconds is None or math.isnan(seconds):
        return "n/a"
    scale, unit = _time_unit(seconds)
    return f"{_number(seconds * scale)} {unit}"


def fmt_spread(s: Json, fmt: Callable[[float], str] | None = None) -> str:
    """The median with its p10-p90 spread in brackets, the spread in the median's unit."""
    if fmt is not None:
        return f"{fmt(s['median'])} ({fmt(s['p10'])}{DASH}{fmt(s['p90'])})"
    median = s["median"]
    if median is None or math.isnan(median):
        return "n/a"
    scale, unit = _time_unit(median)
    if s["n"] < 2:
        return f"{_number(median * scale)} {unit}"
    low, high = _number(s["p10"] * scale), _number(s["p90"] * scale)
    return f"{_number(median * scale)} {unit} ({low}{DASH}{high})"


def fmt_ratio(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value:.2f}{TIMES}" if value < 10 else f"{value:.0f}{TIMES}"


def fmt_bytes(size: float) -> str:
    if size >= 1024 * 1024:
        return f"{size / 1024 / 1024:.3g} MiB"
    if size >= 1024:
        return f"{size / 1024:.3g} KiB"
    return f"{size:.0f} B"


def fmt_rate(value: float) -> str:
    return f"{value:.1f}"


def fmt_count(value: float) -> str:
    return f"{value:,.0f}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def ordered(names: Sequence[str], order: Sequence[str]) -> list[str]:
    """`names` in the order of `order`, any other after those."""
    return sorted(names, key=lambda n: order.index(n) if n in order else len(order))


def references_header(comparisons: list[Json]) -> list[str]:
    """The reference names of a scenario's comparisons, in the issue's order."""
    return ordered(list(comparisons[0]["references"]), REFERENCE_ORDER) if comparisons else []


# ---------------------------------------------------------------- plots


def pyplot() -> Any:
    """matplotlib's `pyplot` on the Agg backend (files, no display), imported on first use.

    matplotlib comes with the `bench` extra: the tables of the report, and the tests that
    read them, need none of it; only drawing a plot does.
    """
    import matplotlib as mpl  # noqa: PLC0415 - the `bench` extra, only when a plot is drawn

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def figure(name: str, draw: Callable[[], None], caption: str) -> str:
    """Draw a plot into `docs/benchmarks/<name>.png`; return the Markdown that shows it."""
    PLOTS.mkdir(parents=True, exist_ok=True)
    plt = pyplot()
    draw()
    plt.tight_layout()
    plt.savefig(PLOTS / f"{name}.png", dpi=90)
    plt.close("all")
    return f"![{caption}](benchmarks/{name}.png)\n"


def errorbar(ax: Any, xs: list[float], stats: list[Json], label: str, **kw: Any) -> None:
    """Medians with p10-p90 error bars."""
    medians = [s["median"] for s in stats]
    low = [s["median"] - s["p10"] for s in stats]
    high = [s["p90"] - s["median"] for s in stats]
    ax.errorbar(xs, medians, yerr=[low, high], label=label, marker="o", capsize=3, **kw)
