"""The desired state of a scope, read from the database: its heads, pinned versions, manifests.

`heads` gives every live skill of the scope with its head (the direct source turns them
into the desired state with `source.resolve`); `pinned` and `manifest` read one version's
package. `serve` is what the HTTP API answers a remote reconciler (`GET .../desired`): the
heads, the manifests of those in use and, for one target, its registration and records,
under one entity tag, so that a reconciler whose registry has not changed gets a 304
without the manifests even being read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from blake3 import blake3
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import keys as db_keys
from registry.db import materializations as db_materializations
from registry.db import revocations as db_revocations
from registry.db import skills as db_skills
from registry.domain.manifest import Manifest
from registry.domain.model import Scope
from registry.domain.revocation import Revoked
from registry.errors import Inconsistency, VersionRevoked
from registry.services import read
from registry.services.context import Context
from registry.services.materialize.applied import CONVERGED, EVENT_KINDS, TARGET_REGISTERED
from registry.services.materialize.forget import TARGET_FORGOTTEN
from registry.services.materialize.source import Applied, Head, Place, Want

SEEN_EVERY: Final = timedelta(seconds=60)
# What targets and their hosts report about themselves: never a change of a desired state.
# A signed state's sequence is the workspace's newest event of any other kind, so a host's
# record does not make a new sequence for every host (docs/trust.md, "Freshness").
TARGET_EVENTS: Final = frozenset(
    {*EVENT_KINDS.values(), TARGET_REGISTERED, CONVERGED, TARGET_FORGOTTEN}
)


def head_of(row: db_materializations.HeadRow, manifest: Manifest | None = None) -> Head:
    return Head(
        slug=row.slug,
        state=row.state,
        use_paused=row.use_paused,
        version=row.version,
        manifest_hash=row.manifest_hash,
        skill_id=row.skill_id,
        manifest_id=row.manifest_id,
        manifest=manifest,
        revoked=row.revoked,
    )


async def heads(ctx: Context, scope: Scope) -> dict[str, Head]:
    """Every live skill of `scope` (deleted ones excepted) with its head, by slug."""

    async def work(conn: AsyncConnection) -> list[db_materializations.HeadRow]:
        return await db_materializations.heads(conn, scope)

    return {h.slug: head_of(h) for h in await ctx.read(work)}


async def pinned(ctx: Context, scope: Scope, slug: str, version: int, skill_id: int | None) -> Want:
    """The package of one version of a live skill (`VersionNotFound` if it is gone).

    A revoked version is never wanted: `VersionRevoked` blocks the pin.
    """

    async def work(conn: AsyncConnection) -> Want:
        skill, row = await read.locate(conn, scope, slug, version)
        revoked = await db_revocations.of_version(conn, scope.workspace, skill.id, row.number)
        if revoked is not None:
            raise VersionRevoked(slug, row.number, revoked.kind, revoked.reason)
        return Want(skill_id, row.number, row.manifest_hash, row.manifest_id)

    return await ctx.read(work)


async def manifest(ctx: Context, scope: Scope, want: Want) -> Manifest:
    """The wanted manifest, read from its rows and checked against its hash."""
    if want.manifest is not None:
        return want.manifest
    manifest_id = want.manifest_id
    assert manifest_id is not None

    async def work(conn: AsyncConnection) -> Manifest:
        return await db_skills.manifest_entries(conn, scope.workspace, manifest_id)

    found = await ctx.read(work)
    if found.hash != want.manifest_hash:
        raise Inconsistency(f"manifest {want.manifest_hash[:16]} does not match its rows")
    return found


@dataclass(frozen=True)
class Served:
    """The desired state of a scope as the HTTP API serves it, with its entity tag.

    `heads` carry their manifests when they are in use. When the caller already had the
    tag (`unchanged`), `heads`, `place` and `applied` are empty: nothing was read that a
    304 does not need.
    """

    scope: Scope
    tag: str
    unchanged: bool
    heads: tuple[Head, ...] = ()
    place: Place | None = None
    applied: tuple[Applied, ...] = ()
    seq: int = 0  # the state's sequence (`TARGET_EVENTS`), read in the same snapshot
    # The head's attestation digest and package digest, by skill id (signed heads only).
    attestations: dict[int, tuple[str, str]] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)  # every signing key: id -> hex
    # The revocations in force of the scope's live skills (docs/revocation.md).
    revoked: tuple[Revoked, ...] = ()
    # The target asked about: registered in this scope, and when its host was last seen.
    target_known: bool = False
    seen_at: datetime | None = None


async def serve(
    ctx: Context,
    scope: Scope,
    target_id: str | None,
    matches: Callable[[str], bool],
    *,
    epoch: int | None = None,
) -> Served:
    """The desired state of `scope`, and of the target `target_id` if given (see above).

    `matches(tag)` says whether the caller has the representation tagged `tag` already
    (`If-None-Match`); then the manifests are not read. `epoch`, for a state to be signed,
    is the signing period (`registry/services/trust/state.py`): it is part of the tag, so
    a host gets a fresh signature once per period even while nothing changes, and with it
    the sequence number and the heads' attestation digests are read.
    """

    async def work(conn: AsyncConnection) -> Served:
        rows = await db_materializations.heads(conn, scope)
        revoked = tuple(
            Revoked(r.slug, r.version, r.manifest_hash, r.kind, r.reason)
            for r in await db_revocations.of_live_scope(conn, scope)
        )
        place: Place | None = None
        applied: list[Applied] = []
        seen_at, known = None, False
        if target_id is not None:
            found = await db_materializations.target(conn, scope.workspace, target_id)
            if found is not None and found.agent == scope.agent:
                seen_at, known = found.seen_at, True
                place = Place(found.target_id, found.path, found.host, found.mode)
                records = await db_materializations.applied(conn, scope, [target_id])
                applied = [
                    Applied(r.slug, r.manifest_hash, r.version, r.outcome, r.error) for r in records
                ]
        tag = _tag(rows, place, applied, epoch, revoked)
        if matches(tag):
            return Served(scope, tag, unchanged=True, target_known=known, seen_at=seen_at)
        ids = [r.manifest_id for r in rows if r.in_use]
        manifests = await db_materializations.manifests(conn, scope.workspace, ids)
        served = tuple(head_of(r, manifests.get(r.manifest_id)) for r in rows)
        for head in served:
            if head.manifest is not None and head.manifest.hash != head.manifest_hash:
                raise Inconsistency(f"manifest {head.manifest_hash[:16]} does not match its rows")
        seq, attestations, keys = 0, {}, {}
        if epoch is not None:
            seq = await db_materializations.state_seq(conn, scope.workspace, TARGET_EVENTS)
            attestations = await db_keys.attested_heads(conn, [r.skill_id for r in rows])
            keys = {k.key_id: k.public_key for k in await db_keys.keys(conn)}
        return Served(
            scope,
            tag,
            unchanged=False,
            heads=served,
            place=place,
            applied=tuple(applied),
            seq=seq,
            attestations=attestations,
            keys=keys,
            revoked=revoked,
            target_known=known,
            seen_at=seen_at,
        )

    return await ctx.read(work)


async def retag(
    ctx: Context,
    workspace: str,
    target_id: str,
    held: str,
    *,
    before: Applied | None,
    after: Applied,
    epoch: int,
) -> str | None:
    """The tag of the state a host holds under tag `held`, once it recorded `after`.

    A host that records what it applied changes its own state's tag (its records are in
    it), so its next poll would fetch the whole state again for nothing but its own record.
    If `held` is the target's state as it is now, with the record of `after.slug` being
    `before` (nothing else moved since the host fetched it, and the signing period is the
    same), the answer is the tag of that state with the record `after`, which the host
    then holds; else None (the host fetches the state again).
    """

    async def work(conn: AsyncConnection) -> str | None:
        found = await db_materializations.target(conn, workspace, target_id)
        if found is None:
            return None
        scope = Scope(found.workspace, found.agent)
        rows = await db_materializations.heads(conn, scope)
        revoked = tuple(
            Revoked(r.slug, r.version, r.manifest_hash, r.kind, r.reason)
            for r in await db_revocations.of_live_scope(conn, scope)
        )
        place = Place(found.target_id, found.path, found.host, found.mode)
        records = [
            Applied(r.slug, r.manifest_hash, r.version, r.outcome, r.error)
            for r in await db_materializations.applied(conn, scope, [target_id])
        ]
        if _tag(rows, place, _with(records, after.slug, before), epoch, revoked) != held:
            return None
        return _tag(rows, place, _with(records, after.slug, after), epoch, revoked)

    return await ctx.read(work)


def _with(records: list[Applied], slug: str, record: Applied | None) -> list[Applied]:
    """`records` (in the database's order) with the record of `slug` being `record`."""
    others = [r for r in records if r.slug != slug]
    if record is None:
        return others
    if len(others) < len(records):
        return [record if r.slug == slug else r for r in records]
    return sorted([*others, record], key=lambda r: r.slug)


async def seen(ctx: Context, workspace: str, target_id: str, last: datetime | None) -> None:
    """Record that the target's host asked for its state, at most once a `SEEN_EVERY`.

    "Last seen" is what `status --revoked` shows, and how it finds a host silent past its
    state's expiry; a granularity keeps a host that polls every second from writing as
    often.
    """
    now = ctx.clock.now()
    every = min(SEEN_EVERY, timedelta(seconds=ctx.settings.state_validity / 16))
    if last is not None and now - last < every:
        return
    await ctx.write(
        lambda conn: db_revocations.seen(conn, workspace, target_id, now=now, before=now - every)
    )


def _tag(
    rows: list[db_materializations.HeadRow],
    place: Place | None,
    applied: list[Applied],
    epoch: int | None,
    revoked: tuple[Revoked, ...] = (),
) -> str:
    """A strong entity tag over everything the representation is made of.

    Manifests are not read for it: a head's manifest hash names its files. The skill row
    id is in it, so a skill deleted and created again changes the tag even with the same
    content.
    """
    parts = {
        "heads": [
            [r.skill_id, r.slug, r.state, r.use_paused, r.version, r.manifest_hash] for r in rows
        ],
        "place": None if place is None else [place.target_id, place.path, place.host, place.mode],
        "applied": [[a.slug, *a.key] for a in applied],
        "epoch": epoch,
        "revoked": [r.document() for r in revoked],
    }
    encoded = json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()
    return f'"{blake3(encoded).hexdigest()[:32]}"'
