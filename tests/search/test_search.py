"""`Registry.search` on both databases: ranking, scoping, states, and an index that follows.

The index is kept from the outbox before each search (registry/services/search/indexer.py):
these tests write through the registry as any caller does and then search, so every one
of them also checks that the index took in the change.
"""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from registry.db.engine import create_engine
from registry.domain.model import ANY, PackageFile, Scope
from registry.domain.search import STOP_WORDS
from registry.services.search import indexer
from tests.support.packages import publish
from tests.support.scopes import ACME, GLOBEX


def skill(slug: str, description: str, body: str = "", triggers: tuple[str, ...] = ()) -> dict:
    metadata = ""
    if triggers:
        lines = "".join(f"    {t}\n" for t in triggers)
        metadata = f"metadata:\n  triggers: |\n{lines}"
    text = f"---\nname: {slug}\ndescription: {description}\n{metadata}---\n\n{body}\n"
    return {"SKILL.md": text.encode(), "scripts/run.py": PackageFile(b"print(1)\n", True)}


async def slugs(registry, query: str, scope: Scope = ACME, **options) -> list[str]:
    return [h.slug for h in (await registry.search(scope, query, **options)).hits]


async def test_name_and_description_rank_above_the_body(registry):
    await publish(registry, "notes", skill("notes", "Keeps notes.", "Mentions invoices once."))
    await publish(registry, "invoice-maker", skill("invoice-maker", "Makes invoices."))
    await publish(registry, "unrelated", skill("unrelated", "Something else."))
    assert await slugs(registry, "invoice") == ["invoice-maker", "notes"]


async def test_words_are_stemmed_all_required_and_prefixes_match(registry):
    await publish(registry, "pdf-report", skill("pdf-report", "Printable reports from tables."))
    await publish(registry, "csv-report", skill("csv-report", "Reports as CSV files."))
    assert sorted(await slugs(registry, "reporting")) == ["csv-report", "pdf-report"]
    assert await slugs(registry, "reports printable") == ["pdf-report"]
    assert await slugs(registry, "print*") == ["pdf-report"]
    assert await slugs(registry, "pdf spreadsheet") == []


async def test_triggers_and_the_body_are_searched(registry):
    await publish(
        registry,
        "pdf-report",
        skill("pdf-report", "Reports.", "Uses reportlab.", triggers=("turn my tables into paper",)),
    )
    assert await slugs(registry, "paper") == ["pdf-report"]
    assert await slugs(registry, "reportlab") == ["pdf-report"]


async def test_hits_carry_the_head_a_snippet_and_highlights(registry):
    body = "Intro words here.\n\nRender every spreadsheet as a landscape page."
    await publish(registry, "pdf-report", skill("pdf-report", "Printable reports.", body))
    results = await registry.search(ACME, "Landscape spreadsheets")
    assert results.terms == ("landscape", "spreadsheets")
    [hit] = results.hits
    assert (hit.slug, hit.version, hit.description) == ("pdf-report", 1, "Printable reports.")
    assert "\n" not in hit.snippet
    marked = {hit.snippet[a:b].lower() for a, b in hit.highlights}
    assert marked == {"landscape", "spreadsheet"}


async def test_a_search_never_leaves_its_scope(registry):
    await publish(registry, "mine", skill("mine", "Shared word zebra."))
    await publish(registry, "theirs", skill("theirs", "Shared word zebra."), scope=GLOBEX)
    other_agent = Scope(ACME.workspace, "helper")
    await publish(registry, "agents", skill("agents", "Shared word zebra."), scope=other_agent)
    assert await slugs(registry, "zebra") == ["mine"]
    assert await slugs(registry, "zebra", GLOBEX) == ["theirs"]
    assert await slugs(registry, "zebra", other_agent) == ["agents"]


async def test_a_new_version_replaces_the_old_text(registry):
    await publish(registry, "pdf-report", skill("pdf-report", "Uses the walrus library."))
    assert await slugs(registry, "walrus") == ["pdf-report"]
    await publish(registry, "pdf-report", skill("pdf-report", "Uses the otter library."), 1)
    assert await slugs(registry, "walrus") == []
    [hit] = (await registry.search(ACME, "otter")).hits
    assert hit.version == 2
    await registry.restore(ACME, "pdf-report", 1, expected_head=2, actor="owner")
    assert await slugs(registry, "walrus") == ["pdf-report"]
    assert (await registry.search(ACME, "walrus")).hits[0].version == 3


async def test_deleted_and_paused_skills_only_when_asked(registry):
    await publish(registry, "gone", skill("gone", "About giraffes."))
    await publish(registry, "resting", skill("resting", "About giraffes too."))
    await publish(registry, "here", skill("here", "Giraffes, still."))
    await registry.delete(ACME, "gone", actor="owner")
    await registry.stop_using(ACME, "resting", actor="owner")
    assert await slugs(registry, "giraffes") == ["here"]
    found = await registry.search(ACME, "giraffes", include_deleted=True, include_paused=True)
    states = {h.slug: (h.state, h.use_paused) for h in found.hits}
    assert states == {
        "gone": ("deleted", False),
        "resting": ("active", True),
        "here": ("active", False),
    }
    await registry.resume_use(ACME, "resting", actor="owner")
    assert sorted(await slugs(registry, "giraffes")) == ["here", "resting"]
    # The slug is free again: the new skill is found, the deleted one still only on demand.
    await publish(registry, "gone", skill("gone", "Giraffes again."))
    hits = (await registry.search(ACME, "giraffes", include_deleted=True)).hits
    assert sorted((h.slug, h.state) for h in hits) == [
        ("gone", "active"),
        ("gone", "deleted"),
        ("here", "active"),
        ("resting", "active"),
    ]


async def test_an_excluded_source_takes_its_text_out_of_the_index(registry):
    await publish(registry, "pdf-report", skill("pdf-report", "Plain tables."))
    await publish(
        registry,
        "pdf-report",
        skill("pdf-report", "Tables with a secret flamingo."),
        1,
        sources=["chat:leaky"],
    )
    assert await slugs(registry, "flamingo") == ["pdf-report"]
    await registry.exclude_source(ACME, "chat:leaky", actor="owner")
    assert await slugs(registry, "flamingo") == []
    assert await slugs(registry, "plain") == ["pdf-report"]


async def test_nothing_to_search_for_finds_nothing(registry):
    await publish(registry, "pdf-report", skill("pdf-report", "The tables."))
    for query in ("", "   ", "the of and", "!!! ???"):
        assert (await registry.search(ACME, query)).hits == ()


async def test_each_change_is_indexed_once_and_a_quiet_search_indexes_nothing(registry):
    for i in range(3):
        await publish(registry, f"s{i}", skill(f"s{i}", "Walrus tables."))
    assert await indexer.catch_up(registry.ctx, ACME.workspace) == 3
    assert await indexer.catch_up(registry.ctx, ACME.workspace) == 0
    await registry.stop_using(ACME, "s1", actor="owner")  # an event, no new text
    assert await indexer.catch_up(registry.ctx, ACME.workspace) == 0
    await publish(registry, "s1", skill("s1", "Otter tables."), ANY)
    assert await indexer.catch_up(registry.ctx, ACME.workspace) == 1


async def test_searches_catching_up_at_once_agree(registry):
    for i in range(20):
        await publish(registry, f"s{i:02}", skill(f"s{i:02}", f"Walrus number {i}."))
    answers = await asyncio.gather(*(slugs(registry, "walrus", limit=100) for _ in range(4)))
    assert all(sorted(a) == [f"s{i:02}" for i in range(20)] for a in answers)
    assert await indexer.catch_up(registry.ctx, ACME.workspace) == 0


async def test_rebuild_rewrites_every_document(registry):
    await publish(registry, "pdf-report", skill("pdf-report", "Walrus tables."))
    await publish(registry, "gone", skill("gone", "Walrus gone."))
    await registry.delete(ACME, "gone", actor="owner")
    assert await registry.reindex_search(ACME.workspace) == 2
    assert await registry.reindex_search(ACME.workspace) == 2
    assert await slugs(registry, "walrus") == ["pdf-report"]
    if registry.engine.dialect.name == "sqlite":
        async with registry.engine.begin() as conn:  # FTS5 checks it matches its content
            await conn.execute(
                sa.text("INSERT INTO search_fts(search_fts) VALUES('integrity-check')")
            )


async def test_an_unreadable_skill_md_leaves_the_skill_findable_by_name(registry, local_store):
    pub = await publish(registry, "pdf-report", skill("pdf-report", "Walrus tables."))
    info = await registry.package_info(ACME, "pdf-report", pub.version)
    skill_md = next(e.digest for e in info.manifest.entries if e.path == "SKILL.md")
    await local_store.delete(skill_md)
    assert await slugs(registry, "walrus") == []
    assert await slugs(registry, "pdf report") == ["pdf-report"]


async def test_the_limit_cuts_the_ranked_list(registry):
    for i in range(5):
        await publish(registry, f"s{i}", skill(f"s{i}", "Walrus " * (i + 1)))
    hits = (await registry.search(ACME, "walrus", limit=2)).hits
    assert len(hits) == 2
    assert hits[0].score >= hits[1].score


@pytest.mark.postgres
async def test_the_stop_words_are_postgresqls_own(postgresql_url):
    # Dropping them from queries keeps SQLite's answers equal to PostgreSQL's, which never
    # indexes them: the list must be exactly the one its `english` configuration uses.
    engine = create_engine(postgresql_url)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(
                sa.text(
                    "SELECT w, to_tsvector('english', w) = ''::tsvector AS stop "
                    "FROM unnest(CAST(:words AS text[])) AS w"
                ),
                {"words": sorted(STOP_WORDS | {"walrus", "report", "tables"})},
            )
            stops = {r.w for r in rows if r.stop}
    finally:
        await engine.dispose()
    assert stops == STOP_WORDS
