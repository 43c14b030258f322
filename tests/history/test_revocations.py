"""Yank and unyank (docs/revocation.md): the head moves in one locked write, or use stops.

Capability tests, on both databases: a yank of the head, of an older version, of the only
version, a concurrent writer whose compare-and-swap names the yanked head, and unyank.
"""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from registry.db.tables import Revocation
from registry.domain.attestation import keys_from_document, verify
from registry.domain.revocation import REVOCATION_PREDICATE
from registry.errors import ArgumentInvalid, HeadConflict, VersionRevoked
from tests.support import packages
from tests.support.faults import ScriptedFailpoints
from tests.support.history import events
from tests.support.packages import SLUG, as_bytes, package
from tests.support.scopes import ACME


async def publish(registry, tag, **options):
    return await packages.publish(registry, tag=tag, actor="u", **options)


async def test_yanking_the_head_moves_it_to_the_newest_allowed_version_in_one_write(registry):
    await publish(registry, "1")
    await publish(registry, "2", expected=1)
    await publish(registry, "1", expected=2)  # v3 has v1's package
    await publish(registry, "4", expected=3)
    await registry.yank(ACME, SLUG, 3, kind="broken", reason="bad", actor="o")  # an older one
    report = await registry.yank(ACME, SLUG, 4, kind="security", reason="leaks", actor="o")
    # v3 is revoked, and v1 is v3's package: the head goes back to v2, as v5.
    assert (report.head, report.moved_to, report.restored_from) == (4, 5, 2)
    head = await registry.read_package(ACME, SLUG)
    assert head.version == 5
    assert as_bytes(head.files) == as_bytes(package(SLUG, tag="2"))
    page = await registry.history(ACME, SLUG)
    assert (page.items[0].origin, page.items[0].restored_from) == ("revocation", 2)
    revoked = await registry.revoked_versions(ACME, SLUG)
    assert {n: (r.kind, r.reason) for n, r in revoked.items()} == {
        3: ("broken", "bad"),
        4: ("security", "leaks"),
    }
    kinds = [e[2] for e in await events(registry)]
    assert kinds[-3:] == ["version.revoked", "version.revoked", "published"]
    # History and pinned reads still show a revoked version; a restore never brings it back.
    assert (await registry.read_package(ACME, SLUG, 4)).version == 4
    with pytest.raises(VersionRevoked) as caught:
        await registry.restore(ACME, SLUG, 4, expected_head=5, actor="o")
    assert (caught.value.kind, caught.value.reason) == ("security", "leaks")
    # The statement is signed by the registry's key, about the revoked package.
    async with registry.engine.connect() as conn:
        envelope = await conn.scalar(sa.select(Revocation.envelope).where(Revocation.version == 4))
    keys = keys_from_document(await registry.trust.keys_document())
    verified = verify(envelope, keys, REVOCATION_PREDICATE)
    assert verified.subject == f"{ACME.workspace}/{ACME.agent}/{SLUG}@4"
    assert (verified.predicate["head"], verified.predicate["kind"]) == (5, "security")


async def test_yanking_the_only_version_stops_use_and_resume_is_refused(registry):
    await publish(registry, "1")
    report = await registry.yank(ACME, SLUG, 1, kind="policy", reason="not allowed", actor="o")
    assert (report.use_stopped, report.moved_to) == (True, None)
    status = await registry.skill_status(ACME, SLUG)
    assert status.use_paused
    assert "not allowed" in (status.pause_reason or "")
    with pytest.raises(VersionRevoked):
        await registry.resume_use(ACME, SLUG, actor="o")
    again = await registry.yank(ACME, SLUG, 1, kind="policy", reason="twice", actor="o")
    assert (again.already, again.revocation.reason) == (True, "not allowed")
    await registry.unyank(ACME, SLUG, 1, actor="o")
    assert not (await registry.revoked_versions(ACME, SLUG))
    assert (await registry.resume_use(ACME, SLUG, actor="o")).use_paused is False
    kinds = [e[2] for e in await events(registry)]
    assert kinds[-4:] == ["version.revoked", "use_paused", "version.unrevoked", "use_resumed"]


async def test_yank_and_writers_interleaved_each_lose_their_compare_and_swap(make_registry):
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints)
    await publish(registry, "1")
    await publish(registry, "2", expected=1)
    # The yank of head 2 has read its fallback (v1) when a writer moves the head to 3.
    park = failpoints.park("read.located")
    yank = asyncio.create_task(
        registry.yank(ACME, SLUG, 2, kind="broken", reason="crash", actor="o")
    )
    await park.reached.wait()
    await publish(registry, "3", expected=2)
    park.release.set()
    report = await yank
    # Its compare-and-swap on head 2 failed; read again, v2 is an older version now.
    assert (report.moved_to, report.use_stopped) == (None, False)
    assert (await registry.read_package(ACME, SLUG)).version == 3
    # A writer that read head 3 before its yank finds the head moved (a stale head).
    await registry.yank(ACME, SLUG, 3, kind="broken", reason="crash", actor="o")
    with pytest.raises(HeadConflict) as caught:
        await publish(registry, "4", expected=3)
    assert (caught.value.expected, caught.value.current) == (3, 4)
    head = await registry.read_package(ACME, SLUG)
    assert head.version == 4
    assert as_bytes(head.files) == as_bytes(package(SLUG, tag="1"))


async def test_a_yank_is_refused_before_anything_is_read_when_its_arguments_are_wrong(registry):
    await publish(registry, "1")
    with pytest.raises(ArgumentInvalid):
        await registry.yank(ACME, SLUG, 1, kind="bored", reason="x", actor="o")
    with pytest.raises(ArgumentInvalid):
        await registry.yank(ACME, SLUG, 1, kind="broken", reason=" ", actor="o")
    assert not await registry.revoked_versions(ACME, SLUG)
