"""A pending write belongs to the skill it was made for, and a retry is one write.

docs/history.md, "Capacity for learning": a waiting write whose skill moved on (the slug got
another skill, the copy it was made on was deleted) closes as `failed` with the refusal's
code; the same write sent twice while it waits is one pending write (SQLite and PostgreSQL).
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from registry.errors import DraftKept
from registry.settings import Settings
from tests.corpus.archives import LISTING, good_zip
from tests.support.history import events
from tests.support.learning import learn, learned, prose
from tests.support.packages import SLUG, package
from tests.support.scopes import ACME


async def _full(make_registry):
    """A registry whose one saved slot is taken (by `kept`)."""
    registry = await make_registry(settings=Settings(capacity_saved=1))
    await registry.write_package(ACME, "kept", package("kept"), expected_head=None, actor="u")
    return registry


async def _installed_copy_waiting(make_registry):
    """An installed copy (automatic improvements on) whose learned version waits alone."""
    registry = await make_registry(settings=Settings(capacity_saved=1))
    await registry.marketplace.import_listing(LISTING, good_zip(), actor="publisher")
    assert (await registry.marketplace.install(ACME, LISTING)).succeeded
    await registry.set_auto_improve(ACME, LISTING, enabled=True, actor="owner")
    await registry.write_package(ACME, "kept", package("kept"), expected_head=None, actor="u")
    # Any head (the learning job's usual write): pinned to the copy the lock saw.
    waiting = await learn(registry, learned(LISTING, text=prose(5)), slug=LISTING)
    assert (waiting.pending is not None, waiting.version) == (True, 1)
    return registry, waiting.pending


async def test_a_waiting_new_skill_fails_if_the_owner_creates_the_slug(make_registry):
    registry = await _full(make_registry)
    waiting = await learn(registry, learned(text="LEARNED"))  # any head, no skill yet
    bigger = await make_registry(settings=Settings(capacity_saved=2))
    owner = await bigger.write_package(
        ACME, SLUG, learned(text="OWNER"), expected_head=None, actor="owner"
    )
    assert owner.version == 1
    (closed,) = await bigger.learning.apply_pending_writes(ACME.workspace)
    assert (closed.id, closed.status, closed.outcome["error"]) == (
        waiting.pending,
        "failed",
        "skill_exists",
    )
    head = await bigger.read_package(ACME, SLUG)
    assert head.version == 1
    assert b"OWNER" in head.files["SKILL.md"].data
    assert [i.actor for i in (await bigger.history(ACME, SLUG)).items] == ["owner"]
    # What the lock saw is what the write expects: no skill.
    assert closed.expected == "new"


async def test_a_waiting_version_of_a_deleted_copy_fails_and_does_not_bring_it_back(
    make_registry,
):
    registry, pending = await _installed_copy_waiting(make_registry)
    await registry.delete(ACME, LISTING, actor="owner")  # the waiting write is tried: gone
    (closed,) = await registry.learning.pending_writes(ACME.workspace, waiting_only=False)
    assert (closed.id, closed.status, closed.outcome["error"]) == (
        pending,
        "failed",
        "skill_not_found",
    )
    await registry.delete(ACME, "kept", actor="owner")  # a saved slot frees
    assert (await registry.list_skills(ACME)).items == []
    assert "pending_write_failed" in [k for _, _, k in await events(registry)]


async def test_a_waiting_version_of_a_copy_the_owner_edited_fails(make_registry):
    registry, pending = await _installed_copy_waiting(make_registry)
    edit = learned(LISTING, text="OWNER")
    await registry.write_package(ACME, LISTING, edit, expected_head=1, actor="owner")
    await registry.delete(ACME, "kept", actor="owner")  # a slot frees: applied by itself
    (closed,) = await registry.learning.pending_writes(ACME.workspace, waiting_only=False)
    assert (closed.id, closed.status, closed.outcome["error"]) == (
        pending,
        "failed",
        "head_conflict",
    )
    head = await registry.read_package(ACME, LISTING)
    assert (head.version, b"OWNER" in head.files["SKILL.md"].data) == (2, True)


async def test_a_waiting_version_of_a_deleted_copy_does_not_land_on_the_slugs_new_skill(
    make_registry,
):
    registry = await make_registry(settings=Settings(capacity_saved=1))
    await registry.marketplace.import_listing(LISTING, good_zip(), actor="publisher")
    assert (await registry.marketplace.install(ACME, LISTING)).succeeded
    await registry.set_auto_improve(ACME, LISTING, enabled=True, actor="owner")
    await registry.write_package(ACME, "kept", package("kept"), expected_head=None, actor="u")
    # A new learned skill waits first; the copy's learned version waits behind it.
    first = await learn(registry, learned("first"), slug="first", expected=None)
    copy = await learn(registry, learned(LISTING, text=prose(5)), slug=LISTING)
    assert (first.pending is not None, copy.pending is not None) == (True, True)
    await registry.delete(ACME, LISTING, actor="owner")  # still no saved slot: both wait
    bigger = await make_registry(settings=Settings(capacity_saved=3))
    # Another skill under the slug, at the head number the copy's write expects.
    mine = await bigger.write_package(
        ACME, LISTING, learned(LISTING, text="OWNER"), expected_head=None, actor="owner"
    )
    assert mine.version == 1
    closed = await bigger.learning.apply_pending_writes(ACME.workspace)
    assert [(w.id, w.status, (w.outcome or {}).get("error")) for w in closed] == [
        (first.pending, "applied", None),
        (copy.pending, "failed", "skill_exists"),
    ]
    head = await bigger.read_package(ACME, LISTING)
    assert (head.version, b"OWNER" in head.files["SKILL.md"].data) == (1, True)


async def test_the_same_write_sent_twice_while_waiting_is_one_pending_write(make_registry):
    registry = await _full(make_registry)
    files = learned(text=prose(2))
    first = await learn(registry, files)
    retry = await learn(registry, files)
    assert first.pending is not None
    assert retry.pending == first.pending
    assert len(await registry.learning.pending_writes(ACME.workspace)) == 1
    assert [k for _, _, k in await events(registry)].count("write_pending") == 1
    # A different package is a different write: it waits behind the first.
    other = await learn(registry, learned(text=prose(3)))
    assert other.pending not in (None, first.pending)
    await registry.delete(ACME, "kept", actor="owner")
    closed = await registry.learning.pending_writes(ACME.workspace, waiting_only=False)
    assert [(w.id, w.status) for w in closed] == [
        (first.pending, "applied"),
        (other.pending, "failed"),  # made for no skill; the slug has one now
    ]
    history = await registry.history(ACME, SLUG)
    assert [i.number for i in history.items] == [1]


async def test_a_duplicate_waiting_write_applies_without_a_second_version(make_registry):
    registry, pending = await _installed_copy_waiting(make_registry)
    # Two rows of one write, as recorded before retries were merged and heads pinned.
    table = sa.table("pending_writes", *(sa.column(c) for c in ("id", "expected", *_COPIED)))
    async with registry.engine.begin() as conn:
        await conn.execute(sa.update(table).values(expected="any"))
        await conn.execute(
            sa.insert(table).from_select(
                ["expected", *_COPIED],
                sa.select(sa.literal("any"), *(table.c[c] for c in _COPIED)).where(
                    table.c.id == pending
                ),
            )
        )
    await registry.delete(ACME, "kept", actor="owner")  # a slot frees: both are tried
    closed = await registry.learning.pending_writes(ACME.workspace, waiting_only=False)
    assert [(w.status, w.outcome) for w in closed] == [
        ("applied", {"version": 2}),
        ("applied", {"version": 2}),
    ]
    assert [i.number for i in (await registry.history(ACME, LISTING)).items] == [2, 1]


_COPIED = (
    "workspace",
    "agent",
    "slug",
    "skill_id",
    "manifest_id",
    "manifest_hash",
    "file_count",
    "total_size",
    "origin",
    "actor",
    "message",
    "sources",
    "approvals",
    "status",
    "created_at",
    "updated_at",
)


async def test_a_waiting_write_the_owners_draft_now_blocks_fails_and_keeps_the_draft(
    make_registry,
):
    registry = await make_registry(settings=Settings(capacity_saved=1))
    await registry.marketplace.import_listing(LISTING, good_zip(), actor="publisher")
    assert (await registry.marketplace.install(ACME, LISTING)).succeeded
    await registry.set_auto_improve(ACME, LISTING, enabled=True, actor="owner")
    await registry.write_package(ACME, "kept", package("kept"), expected_head=None, actor="u")
    edit = learned(LISTING, text="OWNER")
    await registry.write_package(
        ACME, LISTING, edit, expected_head=1, actor="owner", keep_auto_improve=True
    )
    with pytest.raises(DraftKept) as kept:  # the owner's draft, made on version 1
        await registry.edit(
            ACME, LISTING, learned(LISTING, text="DRAFT"), base_version=1, actor="owner",
            keep_draft=True,
        )  # fmt: skip
    draft = kept.value.proposal
    waiting = await learn(registry, learned(LISTING, text=prose(5)), slug=LISTING)
    assert (waiting.pending is not None, waiting.version) == (True, 2)
    # Improvements off: the waiting write would now be a proposal, which the draft blocks.
    await registry.set_auto_improve(ACME, LISTING, enabled=False, actor="owner")
    await registry.delete(ACME, "kept", actor="owner")  # a slot frees: the write is tried
    (closed,) = await registry.learning.pending_writes(ACME.workspace, waiting_only=False)
    assert (closed.id, closed.status, closed.outcome["error"]) == (
        waiting.pending,
        "failed",
        "state_conflict",
    )
    assert [(p.id, p.kind) for p in (await registry.list_proposals(ACME)).items] == [
        (draft, "draft")
    ]
    assert (await registry.read_package(ACME, LISTING)).version == 2
