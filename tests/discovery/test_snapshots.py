"""Versioned discovery on both databases: each state of an index served, kept as a snapshot.

A snapshot never changes once recorded; every index served is one (recorded once, however
many servers race to record it); a snapshot is listed only while every version it names
is still served, and what a listed snapshot names survives garbage collection.
"""

from __future__ import annotations

import asyncio

import pytest

from registry.domain import discovery
from registry.errors import NotFound
from tests.support.packages import package, publish, skill_md
from tests.support.scopes import ACME, GLOBEX

SINGLE = {"SKILL.md": skill_md("single", "One file only.")}


async def _published(registry) -> None:
    await publish(registry, "single", SINGLE)
    await publish(registry, "multi", package("multi"))
    await registry.discovery.update(ACME, actor="owner", everything=True, public=True)


def _versions(snapshot) -> dict[str, tuple[int, str]]:
    return {e.slug: (e.version, e.sha256) for e in snapshot.entries}


async def test_each_new_state_is_one_snapshot_and_older_ones_never_change(registry):
    await _published(registry)
    first = await registry.discovery.current(ACME)
    assert first.number == 1
    assert (await registry.discovery.current(ACME)).number == 1  # the same state: no new one
    await publish(registry, "multi", package("multi", tag="v2"), 1)
    second = await registry.discovery.current(ACME)
    assert second.number == 2
    assert _versions(second)["multi"][0] == 2
    kept = await registry.discovery.snapshot(ACME, 1)
    assert kept.entries == first.entries
    assert _versions(kept)["multi"][0] == 1
    listed = await registry.discovery.snapshots(ACME)
    assert (listed.latest, listed.numbers) == (2, (1, 2))
    # The index's entries are the latest snapshot's.
    assert (await registry.discovery.index(ACME)).entries == second.entries
    with pytest.raises(NotFound):
        await registry.discovery.snapshot(ACME, 3)
    with pytest.raises(NotFound):
        await registry.discovery.snapshot(GLOBEX, 1)


async def test_servers_racing_to_record_a_state_record_it_once(registry):
    await _published(registry)
    found = await asyncio.gather(*(registry.discovery.current(ACME) for _ in range(4)))
    assert {s.number for s in found} == {1}
    await publish(registry, "single", {"SKILL.md": skill_md("single", "Changed.")}, 1)
    found = await asyncio.gather(*(registry.discovery.current(ACME) for _ in range(4)))
    assert {s.number for s in found} == {2}
    assert (await registry.discovery.snapshots(ACME)).numbers == (1, 2)


async def test_a_snapshot_is_withdrawn_while_a_version_it_names_is_not_served(registry):
    await _published(registry)
    await registry.discovery.current(ACME)
    await registry.discovery.update(ACME, actor="owner", everything=False, skills=["multi"])
    listed = await registry.discovery.snapshots(ACME)
    assert (listed.latest, listed.numbers) == (2, (2,))
    with pytest.raises(NotFound):
        await registry.discovery.snapshot(ACME, 1)
    await registry.discovery.update(ACME, actor="owner", everything=True)
    # Served again, with the same entries: the same bytes, listed again.
    listed = await registry.discovery.snapshots(ACME)
    assert (listed.latest, listed.numbers) == (3, (1, 2, 3))
    assert (await registry.discovery.snapshot(ACME, 1)).entries == (
        await registry.discovery.snapshot(ACME, 3)
    ).entries


async def test_gc_keeps_what_a_listed_snapshot_serves_and_retention_withdraws_it(registry):
    await _published(registry)
    first = await registry.discovery.current(ACME)
    await publish(registry, "multi", package("multi", tag="v2"), 1)
    await registry.discovery.current(ACME)
    await registry.gc.collect(grace=0)
    named = _versions(first)["multi"]
    archive = await registry.discovery.archive(ACME, "multi", named[0])
    assert (archive.sha256, discovery.sha256_hex(archive.data)) == (named[1], named[1])
    await registry.gc.prune(keep_versions=1)
    listed = await registry.discovery.snapshots(ACME)
    assert (listed.latest, listed.numbers) == (2, (2,))
    with pytest.raises(NotFound):
        await registry.discovery.snapshot(ACME, 1)
