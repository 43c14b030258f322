"""Access tokens: stored hashed, shown once, one event per change, CLI (both databases)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from registry.domain.access import Role, parse_token, secret_hash
from registry.errors import InvalidName, TokenNotFound, Unauthenticated
from tests.support.cli import initialised, settings_env
from tests.support.state import table_rows


class SteppedClock:
    def __init__(self) -> None:
        self.current = datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self.current


async def events(registry, kind: str) -> list:
    async with registry.engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT payload FROM events WHERE kind = :k"), {"k": kind}
        )
        return [r.payload for r in rows]


async def test_a_token_is_stored_as_a_hash_and_shown_once(registry):
    issued = await registry.tokens.create("acme", "write", name="ci", actor="admin-1")
    presented = parse_token(issued.token)
    assert presented is not None
    assert presented.token_id == issued.info.id
    rows = await table_rows(registry, "api_tokens")
    assert len(rows) == 1
    assert presented.secret not in repr(rows)
    assert secret_hash(presented.secret) in repr(rows)
    listed = await registry.tokens.list("acme")
    assert [(t.id, t.role, t.name) for t in listed] == [(issued.info.id, Role.WRITE, "ci")]
    assert presented.secret not in repr(listed)
    created = await events(registry, "token_created")
    assert len(created) == 1
    payload = created[0] if isinstance(created[0], dict) else json.loads(created[0])
    assert payload == {
        "token_id": issued.info.id,
        "role": "write",
        "name": "ci",
        "actor": "admin-1",
    }
    assert presented.secret not in json.dumps(payload)


async def test_authenticate_and_revoke(registry):
    issued = await registry.tokens.create("acme", "read", actor="t")
    assert (await registry.tokens.authenticate(issued.token)).id == issued.info.id
    revoked = await registry.tokens.revoke(issued.info.id, actor="t")
    assert revoked.revoked
    with pytest.raises(Unauthenticated):
        await registry.tokens.authenticate(issued.token)
    again = await registry.tokens.revoke(issued.info.id, actor="t")
    assert again.revoked_at == revoked.revoked_at
    assert len(await events(registry, "token_revoked")) == 1  # revoking twice changes nothing
    with pytest.raises(TokenNotFound):
        await registry.tokens.revoke("0" * 16, actor="t")
    assert await registry.tokens.list("acme") == []
    assert len(await registry.tokens.list("acme", include_revoked=True)) == 1


async def test_every_failure_to_authenticate_is_the_same_error(registry):
    issued = await registry.tokens.create("acme", "read", actor="t")
    presented = parse_token(issued.token)
    candidates = [
        "",
        "garbage",
        issued.token + "x",
        issued.token.replace(presented.secret, "A" * 43),
        issued.token.replace(presented.token_id, "f" * 16),
    ]
    for bearer in candidates:
        with pytest.raises(Unauthenticated) as caught:
            await registry.tokens.authenticate(bearer)
        assert str(caught.value) == "a valid access token is required"


async def test_last_use_is_recorded_at_most_once_a_minute(make_registry):
    clock = SteppedClock()
    registry = await make_registry(clock=clock)
    issued = await registry.tokens.create("acme", "read", actor="t")
    await registry.tokens.authenticate(issued.token)
    first = (await registry.tokens.list("acme"))[0].last_used_at
    assert first == clock.current
    clock.current += timedelta(seconds=30)
    await registry.tokens.authenticate(issued.token)
    assert (await registry.tokens.list("acme"))[0].last_used_at == first
    clock.current += timedelta(seconds=31)
    await registry.tokens.authenticate(issued.token)
    assert (await registry.tokens.list("acme"))[0].last_used_at == clock.current


async def test_bad_roles_and_workspaces_are_refused(registry):
    with pytest.raises(InvalidName):
        await registry.tokens.create("acme", "root", actor="t")
    with pytest.raises(InvalidName):
        await registry.tokens.create("-acme", "read", actor="t")
    assert await table_rows(registry, "api_tokens") == []


def test_the_token_commands(database_url, tmp_path):
    run = initialised(settings_env(database_url, tmp_path / "b"))
    created = run(
        "token", "create", "--workspace", "acme", "--role", "owner", "--name", "ci", "--json"
    )
    assert created.exit_code == 0, created.output
    body = json.loads(created.output)
    assert body["token"].startswith("skr_")
    assert body["role"] == "owner"
    human = run("token", "create", "-w", "acme", "-r", "read")
    assert human.exit_code == 0
    assert "shown this once" in human.output
    listed = json.loads(run("token", "list", "--workspace", "acme", "--json").output)
    assert {t["role"] for t in listed} == {"owner", "read"}
    assert all("token" not in t for t in listed)
    revoked = run("token", "revoke", body["id"], "--json")
    assert revoked.exit_code == 0
    assert json.loads(revoked.output)["revoked_at"] is not None
    assert run("token", "revoke", "0" * 16).exit_code == 5
    assert run("token", "create", "-w", "acme", "-r", "root").exit_code == 2
    listed = json.loads(run("token", "list", "-w", "acme", "--all", "--json").output)
    assert len(listed) == 2
    assert sum(t["revoked_at"] is not None for t in listed) == 1
