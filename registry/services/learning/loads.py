"""Loads: which exact version an agent runtime loaded for a conversation.

`record_load(scope, slug, version, conversation)` records that the runtime loaded that
version (a **load**: nothing about whether it helped; no success is ever inferred from
it). Recording is idempotent per (skill, version, conversation) and checks, under the
workspace lock, that the version exists and may be read (`VersionNotFound`,
`VersionUnavailable`). Retention keeps every version a load names (`loads` declares it
in `pins_versions`), so a read pinned to it (`read_package(scope, slug, version)`) keeps
working however many versions come after. No outbox event is written: a load changes no
skill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import loads as db_loads
from registry.domain.arguments import LINE_PATTERN
from registry.domain.model import Scope, check_slug, check_workspace
from registry.errors import InvalidName
from registry.services.context import Context
from registry.services.read import locate

MAX_CONVERSATION_CHARS: Final = 200
_PRINTABLE: Final = re.compile(LINE_PATTERN)


@dataclass(frozen=True)
class LoadRecord:
    """A recorded load; `created` is False when the same load was recorded before."""

    workspace: str
    agent: str
    slug: str
    version: int
    manifest_hash: str
    conversation: str
    loaded_at: datetime
    created: bool


def _check_conversation(conversation: str) -> str:
    if not 1 <= len(conversation) <= MAX_CONVERSATION_CHARS or not _PRINTABLE.match(conversation):
        raise InvalidName(
            "conversation",
            conversation[:80],
            f"1-{MAX_CONVERSATION_CHARS} printable characters",
        )
    return conversation


def _record(row: db_loads.LoadRow, *, created: bool) -> LoadRecord:
    return LoadRecord(
        workspace=row.workspace,
        agent=row.agent,
        slug=row.slug,
        version=row.version,
        manifest_hash=row.manifest_hash,
        conversation=row.conversation,
        loaded_at=row.loaded_at,
        created=created,
    )


async def record_load(
    ctx: Context, scope: Scope, slug: str, version: int, conversation: str
) -> LoadRecord:
    """Record that `version` of `slug` was loaded for `conversation` (see the docstring)."""
    check_slug(slug)
    _check_conversation(conversation)

    async def work(conn: AsyncConnection) -> LoadRecord:
        skill, row = await locate(conn, scope, slug, version)
        found = await db_loads.find(conn, scope.workspace, skill.id, row.number, conversation)
        if found is not None:
            return _record(found, created=False)
        load = db_loads.LoadRow(
            id=0,
            workspace=scope.workspace,
            agent=scope.agent,
            slug=slug,
            skill_id=skill.id,
            version=row.number,
            manifest_hash=row.manifest_hash,
            conversation=conversation,
            loaded_at=ctx.clock.now(),
        )
        await db_loads.record(conn, load)
        return _record(load, created=True)

    return await ctx.locked(scope.workspace, work)


async def loads_of(ctx: Context, workspace: str, conversation: str) -> list[LoadRecord]:
    """Every load recorded for `conversation` in `workspace`, in order."""
    check_workspace(workspace)
    _check_conversation(conversation)

    async def work(conn: AsyncConnection) -> list[db_loads.LoadRow]:
        return await db_loads.of_conversation(conn, workspace, conversation)

    return [_record(r, created=False) for r in await ctx.read(work)]
