"""Search: query latency with 10 and 10,000 skills in a scope, and against a LIKE scan.

One database holds one workspace per level (`search-10`, `search-10000`). Every skill's
`SKILL.md` is a description and a body of 200 words drawn from a vocabulary of 3,000
made-up words, different per skill; the query word (`needle`) is in exactly five skills of
every level, in the body, so every level answers the same five hits and only the size of
the scope differs. The levels are measured in turn inside every repetition.

The subject is `Registry.search` end to end: the outbox check that the index is current
(nothing new: one indexed query), the ranking, and the snippets of the page. The reference
is the same question as a `LIKE '%needle%'` scan over the same documents' name,
description, triggers and body (the scope and state filters included, no ranking, no
snippets): what a registry without a full-text index would do. It runs on a connection
of its own, so its pages do not crowd the registry's connections' caches.

Seeding: the packages are inserted in bulk (bench/seed.py: rows and objects, no write
path, so no outbox events), then `Registry.reindex_search` builds every document, as it
would for data written before the index existed; its rate is reported. PostgreSQL then
runs `ANALYZE`, as autovacuum would after such a load.
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.harness import Result, Run, compare, scenario, time_async
from bench.seed import seed_packages
from bench.services import PG_LOCAL, SQLITE_LOCAL, Backend
from registry.db.engine import create_engine
from registry.domain.model import Scope

NEEDLE: Final = "needle"
HITS: Final = 5
WORDS: Final = 200
# About 3,000 made-up words: consonant + vowel sound + ending (no English word, no stem
# that another word of the list shares).
_ENDING_TEXT: Final = (
    "ron mel tas vin dor lek sup gar nix pom zul fen wib cor tam hul bex dri "
    "olo sna kez muv pri quo rai sto tuk vel wom yar zep ani blo cre dux eft"
)
_ENDINGS: Final = _ENDING_TEXT.split()
_VOCABULARY: Final = tuple(
    f"{a}{b}{c}"
    for a in "bdfgklmnprst"
    for b in ("a", "e", "i", "o", "u", "ai", "ou")
    for c in _ENDINGS
)

_LIKE: Final = sa.text(
    """
SELECT d.skill_id, d.slug
FROM search_documents AS d
JOIN skills AS s ON s.id = d.skill_id
WHERE d.workspace = :workspace AND d.agent = :agent
  AND s.state = 'active' AND NOT s.use_paused
  AND (d.name LIKE :pattern OR d.description LIKE :pattern
       OR d.triggers LIKE :pattern OR d.body LIKE :pattern)
ORDER BY d.slug
LIMIT 20
"""
)


def _skill_md(slug: str, rng: random.Random, *, needle: bool) -> bytes:
    words = rng.choices(_VOCABULARY, k=WORDS)
    if needle:
        words[rng.randrange(WORDS)] = NEEDLE
    description = " ".join(rng.choices(_VOCABULARY, k=12)).capitalize() + "."
    body = "\n\n".join(" ".join(words[i : i + 40]) + "." for i in range(0, WORDS, 40))
    return f"---\nname: {slug}\ndescription: {description}\n---\n\n# {slug}\n\n{body}\n".encode()


async def _seed(backend: Backend, scope: Scope, count: int) -> float:
    """`count` skills in `scope`, five of them with the needle; return documents per second."""
    rng = random.Random(f"{scope.workspace}:{count}")
    with_needle = set(rng.sample(range(count), HITS))
    packages = {
        f"skill-{n:05d}": {"SKILL.md": _skill_md(f"skill-{n:05d}", rng, needle=n in with_needle)}
        for n in range(count)
    }
    root = Path(backend.blob_url.removeprefix("file://"))
    await seed_packages(backend.engine, root, scope, packages, at=datetime.now(UTC))
    started = time.perf_counter()
    written = await backend.registry.reindex_search(scope.workspace)
    elapsed = time.perf_counter() - started
    if written != count:
        raise AssertionError(f"reindexed {written} of {count} skills")
    return count / elapsed


async def _like(engine: AsyncEngine, scope: Scope) -> list[str]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            _LIKE,
            {"workspace": scope.workspace, "agent": scope.agent, "pattern": f"%{NEEDLE}%"},
        )
        return [r.slug for r in rows]


@scenario("search", "Search latency against the number of skills, and against a LIKE scan")
async def search(run: Run) -> Result:
    levels = run.pick([10, 10_000], [10, 200])
    comparisons: list[Result] = []
    rates: dict[str, dict[str, float]] = {}
    for kind in (SQLITE_LOCAL, PG_LOCAL):
        async with run.services.backend(kind) as backend:
            rates[kind] = {}
            for level in levels:
                rates[kind][str(level)] = await _seed(backend, Scope(f"search-{level}"), level)
            if backend.engine.dialect.name == "postgresql":
                async with backend.engine.connect() as conn:
                    await conn.execute(sa.text("ANALYZE"))
                    await conn.commit()
            comparisons += await _measure(run, backend, levels)
    return {"comparisons": comparisons, "index_rate": rates, "hits": HITS, "words": WORDS}


async def _measure(run: Run, backend: Backend, levels: list[int]) -> list[Result]:
    # The scan runs on an engine of its own: on the registry's pooled connections it would
    # fill their page caches with documents before every search of the larger scope.
    reference = create_engine(backend.database_url)
    try:
        return await _alternate(run, backend, reference, levels)
    finally:
        await reference.dispose()


async def _alternate(
    run: Run, backend: Backend, reference: AsyncEngine, levels: list[int]
) -> list[Result]:
    registry = backend.registry
    searched: dict[int, list[float]] = {level: [] for level in levels}
    scanned: dict[int, list[float]] = {level: [] for level in levels}
    for rep in range(run.reps(30, 2) + 1):
        # Each repetition starts at another level, so no level always goes first.
        for level in levels[rep % len(levels) :] + levels[: rep % len(levels)]:
            scope = Scope(f"search-{level}")
            s: list[float] = []
            r: list[float] = []
            results = await time_async(s, registry.search(scope, NEEDLE))
            found = await time_async(r, _like(reference, scope))
            if sorted(h.slug for h in results.hits) != sorted(found) or len(found) != HITS:
                raise AssertionError(f"search and LIKE disagree at {level} skills")
            if rep:
                searched[level] += s
                scanned[level] += r
    smallest = f"{levels[0]} skills"
    return [
        compare(
            {"backend": backend.name, "skills": level},
            searched[level],
            {"like": scanned[level], smallest: searched[levels[0]]},
        )
        for level in levels
    ]
