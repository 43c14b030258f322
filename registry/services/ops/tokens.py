"""Access tokens: create (the secret is shown once), revoke, list, and authenticate.

Creating and revoking a token are state changes of a workspace: each runs in one write
transaction under the workspace lock and writes one outbox event (`token_created`,
`token_revoked`; the payload names the token id, role and name, never the secret or its
hash). Authenticating is a read by token id and a constant-time comparison of hashes;
every failure (malformed, unknown, revoked, wrong secret) is the same `Unauthenticated`,
so a caller learns nothing about which tokens exist.

Console sessions are opened with a token (docs/console.md): `console_session` finds the
live token of a session that was not signed out, in one read; `end_console_session`
records a sign-out, so that a copy of the session's cookie is refused by every process
sharing the database.
"""

from __future__ import annotations

import contextlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import skills as db_skills
from registry.db import tokens as db_tokens
from registry.domain.access import Role, format_token, parse_role, parse_token, secret_hash
from registry.domain.arguments import RULE_RANGE, check_text
from registry.domain.model import Scope, check_workspace
from registry.errors import (
    ArgumentInvalid,
    InvalidName,
    RegistryError,
    TokenNotFound,
    Unauthenticated,
)
from registry.services.context import Context

# How often `last_used_at` is refreshed: a busy token would otherwise turn every read
# into a write (and, on SQLite, serialise reads behind the write lock).
LAST_USED_GRANULARITY: Final = timedelta(minutes=1)
_MAX_NAME: Final = 200
_MAX_SESSION_ID: Final = 64  # the column's width


@dataclass(frozen=True)
class TokenInfo:
    """What may be shown about a token: never its secret."""

    id: str
    workspace: str
    role: Role
    name: str
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


@dataclass(frozen=True)
class IssuedToken:
    """A new token: its description and the bearer string, shown this once."""

    info: TokenInfo
    token: str


def _info(row: db_tokens.TokenRow) -> TokenInfo:
    return TokenInfo(
        id=row.id,
        workspace=row.workspace,
        role=Role(row.role),
        name=row.name,
        created_at=row.created_at,
        revoked_at=row.revoked_at,
        last_used_at=row.last_used_at,
    )


async def _event(
    conn: AsyncConnection, info: TokenInfo, kind: str, actor: str, now: datetime
) -> None:
    await db_skills.insert_event(
        conn,
        Scope(info.workspace),
        "",
        skill_id=None,
        kind=kind,
        version=None,
        manifest_hash=None,
        payload={"token_id": info.id, "role": info.role.value, "name": info.name, "actor": actor},
        now=now,
    )


async def create_token(
    ctx: Context, workspace: str, role: str, *, name: str = "", actor: str
) -> IssuedToken:
    """Create a token for `workspace` with `role`; the returned bearer string is not stored."""
    check_workspace(workspace)
    parsed = parse_role(role)
    check_text("name", name)
    check_text("actor", actor)
    if len(name) > _MAX_NAME:
        raise InvalidName("token name", name[:40], f"at most {_MAX_NAME} characters")
    token_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    now = ctx.clock.now()

    async def work(conn: AsyncConnection) -> TokenInfo:
        row = await db_tokens.insert(
            conn,
            token_id=token_id,
            workspace=workspace,
            role=parsed.value,
            name=name,
            secret_hash=secret_hash(secret),
            now=now,
        )
        info = _info(row)
        await _event(conn, info, "token_created", actor, now)
        return info

    info = await ctx.locked(workspace, work)
    return IssuedToken(info, format_token(token_id, secret))


async def revoke_token(ctx: Context, token_id: str, *, actor: str) -> TokenInfo:
    """Revoke a token (`TokenNotFound` if there is none). Revoking twice changes nothing."""
    check_text("token_id", token_id)
    check_text("actor", actor)
    now = ctx.clock.now()

    found = await ctx.read(lambda conn: db_tokens.get(conn, token_id))
    if found is None:
        raise TokenNotFound(token_id)

    async def work(conn: AsyncConnection) -> TokenInfo:
        row = await db_tokens.get(conn, token_id)
        assert row is not None, "tokens are revoked, never deleted"
        if await db_tokens.revoke(conn, token_id, now):
            info = _info(await db_tokens.get(conn, token_id) or row)
            await _event(conn, info, "token_revoked", actor, now)
            return info
        return _info(row)

    # A token's workspace never changes, so the lock taken is the one its row names.
    return await ctx.locked(found.workspace, work)


async def list_tokens(
    ctx: Context, workspace: str, *, include_revoked: bool = False
) -> list[TokenInfo]:
    """The tokens of `workspace`, oldest first."""
    check_workspace(workspace)

    async def work(conn: AsyncConnection) -> list[TokenInfo]:
        rows = await db_tokens.in_workspace(conn, workspace, include_revoked=include_revoked)
        return [_info(r) for r in rows]

    return await ctx.read(work)


async def authenticate(ctx: Context, bearer: str) -> TokenInfo:
    """The live token `bearer` names, or `Unauthenticated`."""
    presented = parse_token(bearer)
    if presented is None:
        raise Unauthenticated

    async def work(conn: AsyncConnection) -> db_tokens.TokenRow | None:
        return await db_tokens.get(conn, presented.token_id)

    row = await ctx.read(work)
    # Compare even for an unknown id, so that the time taken does not tell ids apart.
    stored = row.secret_hash if row is not None else "0" * 64
    matches = hmac.compare_digest(stored, secret_hash(presented.secret))
    if row is None or not matches or row.revoked_at is not None:
        raise Unauthenticated
    now = ctx.clock.now()
    stale_before = now - LAST_USED_GRANULARITY
    if row.last_used_at is None or row.last_used_at < stale_before:
        await _touch(ctx, row.id, now, stale_before)
    return _info(row)


async def _touch(ctx: Context, token_id: str, now: datetime, stale_before: datetime) -> None:
    async def work(conn: AsyncConnection) -> None:
        await db_tokens.touch(conn, token_id, now, stale_before)

    # Bookkeeping only: a busy database must not fail the request that uses the token.
    with contextlib.suppress(RegistryError):
        await ctx.write(work)


def _check_session_id(session_id: str) -> None:
    if not 1 <= len(session_id) <= _MAX_SESSION_ID:
        raise ArgumentInvalid("session_id", RULE_RANGE, f"1-{_MAX_SESSION_ID} characters")


async def end_console_session(ctx: Context, session_id: str, *, ends_at: datetime) -> None:
    """Record a console session as signed out; `ends_at`: when its cookie expires anyway.

    Idempotent. Rows whose cookie has expired go in the same transaction: what they would
    refuse is refused by the cookie's own signature by then.
    """
    _check_session_id(session_id)
    now = ctx.clock.now()

    async def work(conn: AsyncConnection) -> None:
        await db_tokens.end_session(conn, session_id, ends_at, now)

    await ctx.write(work)


async def console_session(ctx: Context, session_id: str, token_id: str) -> TokenInfo | None:
    """The live token a console session was opened with, or None.

    None when the token is unknown or revoked, or the session was signed out.
    """
    _check_session_id(session_id)

    async def work(conn: AsyncConnection) -> db_tokens.TokenRow | None:
        if await db_tokens.session_ended(conn, session_id):
            return None
        return await db_tokens.get(conn, token_id)

    row = await ctx.read(work)
    return None if row is None or row.revoked_at is not None else _info(row)
