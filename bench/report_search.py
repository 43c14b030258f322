"""The search section of the benchmark page (the scenario: bench/search.py)."""

from __future__ import annotations

from bench.formatting import Json, fmt_ratio, fmt_spread, table
from bench.sections import Section


def section_search(data: Json) -> str:
    comparisons = data["comparisons"]
    smallest = min(c["case"]["skills"] for c in comparisons)
    rows = [
        [
            c["case"]["backend"],
            f"{c['case']['skills']:,}",
            fmt_spread(c["subject"]),
            fmt_spread(c["references"]["like"]),
            fmt_ratio(c["ratios"]["like"]),
            fmt_ratio(c["ratios"][f"{smallest} skills"]),
        ]
        for c in comparisons
    ]
    out = [
        table(
            ["backend", "skills", "search", "LIKE scan", "÷ LIKE", f"÷ {smallest:,} skills"],
            rows,
        )
    ]
    rates = data.get("index_rate", {})
    if rates:
        per_backend = []
        for backend, levels in rates.items():
            figures = ", ".join(f"{rate:,.0f}/s at {int(n):,}" for n, rate in levels.items())
            per_backend.append(f"{backend} {figures}")
        out.append(
            "\nBuilding the index from scratch (`Registry.reindex_search`: one `SKILL.md` read "
            "from the store and one document written per skill), documents per second: "
            + "; ".join(per_backend)
            + ".\n"
        )
    return "".join(out)


SECTIONS: dict[str, Section] = {
    "search": Section(
        section_search,
        (
            "`Registry.search` for a word found in exactly five skills, in scopes of 10 and "
            "10,000 skills (one workspace per level, measured in turn), end to end: the "
            "outbox check that the index is current, the ranking and the page's snippets. "
            "The reference is the same filter as a `LIKE '%needle%'` scan over the same "
            "documents, without ranking or snippets. Every `SKILL.md` holds 200 words of a "
            "3,000-word vocabulary."
        ),
    ),
}
