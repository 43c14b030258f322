"""Revocations reach hosts (docs/revocation.md): `skillreg sync` replaces or removes a revoked
version on its next run, a killed run converges when restarted, a host that could not reach
the registry is listed as stale; the registry shows who holds what (`status --revoked`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import multiprocessing
import signal
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from registry.db.tables import Event
from registry.errors import StorageUnavailable
from registry.http.app import create_app
from tests.materialize.conftest import Remote, expected_files, publish
from tests.support import crash
from tests.support.appserver import AppServer, Faults, Rule
from tests.support.scopes import ACME
from tests.support.targets import load_skill

_FORKSERVER = multiprocessing.get_context("forkserver")
_FORKSERVER.set_forkserver_preload(["tests.support.crash"])


class SteppedClock:
    def __init__(self) -> None:
        self.current = datetime.now(UTC)

    def now(self) -> datetime:
        return self.current


@pytest.fixture
async def clocked(make_registry) -> AsyncIterator[tuple[Remote, SteppedClock]]:
    """The `remote` fixture over a registry whose clock the test moves."""
    clock = SteppedClock()
    registry = await make_registry(clock=clock)
    server = AppServer(Faults(create_app(registry)))
    await server.start()
    issued = await registry.tokens.create(ACME.workspace, "read", name="sync", actor="t")
    yield Remote(registry, server, server.app, issued.token), clock
    await server.stop()


async def _converged_events(registry) -> list[dict[str, object]]:
    async with registry.engine.connect() as conn:
        rows = await conn.execute(
            sa.select(Event.payload).where(Event.kind == "target.converged").order_by(Event.id)
        )
        return [dict(r.payload) for r in rows]


async def test_a_host_replaces_a_revoked_head_on_its_next_run_and_the_registry_sees_it(
    remote, target
):
    registry = remote.registry
    await publish(registry, "alpha", tag="one")
    await publish(registry, "alpha", tag="two")
    await publish(registry, "beta", tag="one")
    await remote.once(target)
    await registry.yank(ACME, "alpha", 2, kind="security", reason="leaks", actor="o")
    await registry.yank(ACME, "beta", 1, kind="broken", reason="crashes", actor="o")
    (alpha, beta) = await registry.revoked_status(ACME.workspace)
    assert [(t.state, t.holds) for t in alpha.targets] == [("holding", 2)]

    report = await remote.once(target)
    assert report.ok, report.failed
    assert load_skill(target, "alpha") == expected_files("alpha", tag="one")
    assert not (target / "beta").exists()  # nothing left to use: removed
    # The host keeps the signed state's revocations, to refuse them in any later state.
    kept = json.loads((target / ".skillreg" / "trust.json").read_bytes())["revoked"]
    assert kept == [["alpha", 2], ["beta", 1]]

    (alpha, beta) = await registry.revoked_status(ACME.workspace)
    for revoked, holds in ((alpha, 3), (beta, None)):
        (hold,) = revoked.targets
        assert (hold.state, hold.holds, hold.stale) == ("converged", holds, False)
        assert hold.seconds is not None
        assert hold.last_seen is not None
    events = await _converged_events(registry)
    assert sorted((e["revoked_version"], e["holds"]) for e in events) == [(1, None), (2, 3)]


@pytest.mark.slow
async def test_a_host_killed_mid_apply_converges_when_it_runs_again(remote, target):
    registry = remote.registry
    await publish(registry, "alpha", tag="one")
    await publish(registry, "alpha", tag="two")
    await remote.once(target)
    await registry.yank(ACME, "alpha", 2, kind="security", reason="leaks", actor="o")
    process = _FORKSERVER.Process(
        target=crash.sync_until_killed,
        args=(remote.url, remote.token, str(target), ACME.workspace, ("materialize.swapped", 1)),
    )
    process.start()
    await asyncio.to_thread(process.join, 120)
    assert process.exitcode == -signal.SIGKILL
    # Killed between the swap and its record: the disk may hold either, never a mix.
    assert load_skill(target, "alpha") in (
        expected_files("alpha", tag="one"),
        expected_files("alpha", tag="two"),
    )
    report = await remote.once(target)
    assert report.ok, report.failed
    assert load_skill(target, "alpha") == expected_files("alpha", tag="one")
    (revoked,) = await registry.revoked_status(ACME.workspace)
    assert [(t.state, t.holds) for t in revoked.targets] == [("converged", 3)]
    assert len(await _converged_events(registry)) == 1


async def test_a_host_that_cannot_reach_the_registry_is_listed_stale_then_converges(
    clocked, target
):
    remote, clock = clocked
    registry = remote.registry
    await publish(registry, "alpha", tag="one")
    await publish(registry, "alpha", tag="two")
    await remote.once(target, clock=clock.now)
    await registry.yank(ACME, "alpha", 2, kind="security", reason="leaks", actor="o")

    # The host cannot reach the registry past its state's expiry: it keeps what it has.
    down = remote.faults.add(Rule("GET", "/desired", status=503))
    clock.current += timedelta(seconds=registry.settings.state_validity + 60)
    with pytest.raises(StorageUnavailable):
        await remote.once(target, clock=clock.now)
    assert load_skill(target, "alpha") == expected_files("alpha", tag="two")
    (revoked,) = await registry.revoked_status(ACME.workspace)
    (hold,) = revoked.targets
    assert (hold.state, hold.stale) == ("holding", True)

    remote.faults.rules.remove(down)
    report = await remote.once(target, clock=clock.now)
    assert report.ok, report.failed
    assert load_skill(target, "alpha") == expected_files("alpha", tag="one")
    (revoked,) = await registry.revoked_status(ACME.workspace)
    (hold,) = revoked.targets
    assert (hold.state, hold.stale, hold.holds) == ("converged", False, 3)


def _told(target) -> int:
    """The sequence of the state the host applied last (`trust.json`)."""
    seq: int = json.loads((target / ".skillreg" / "trust.json").read_bytes())["seq"]
    return seq


async def _sequence(registry) -> int:
    """The sequence of the signed state the registry serves now."""
    served = await registry.targets.desired(ACME, signed=True)
    envelope = json.loads(served.state.signed)
    seq: int = json.loads(base64.b64decode(envelope["payload"]))["seq"]
    return seq


async def test_records_move_neither_the_states_sequence_nor_its_tag_and_a_yank_is_one_write(
    remote, target, tmp_path
):
    """docs/revocation.md, "Hosts converge": only a change of the state moves its sequence.

    Hosts' registrations and records are events of their own; were they to move the
    sequence, each host would report every new sequence, and a host's own record, part of
    its answer, would have it fetch the whole state again: a storm that takes a fleet
    several intervals to settle.
    """
    registry = remote.registry
    await publish(registry, "alpha", tag="one")
    await remote.once(target)
    await remote.once(target)  # registered by its first run: its state's tag moved once
    await publish(registry, "alpha", tag="two")
    before = await _sequence(registry)
    assert (await remote.once(target)).written == ["alpha"]
    await remote.once(tmp_path / "other")
    assert await _sequence(registry) == before == _told(target)
    remote.faults.seen.clear()
    assert (await remote.once(target)).unchanged == ["alpha"]
    assert remote.faults.seen == [("GET", "/v1/workspaces/acme/desired", 304)]

    await registry.yank(ACME, "alpha", 2, kind="security", reason="leaks", actor="o")
    remote.faults.seen.clear()
    assert (await remote.once(target)).written == ["alpha"]
    assert _told(target) == await _sequence(registry) > before
    writes = [path for method, path, _ in remote.faults.seen if method == "PUT"]
    assert len(writes) == 1  # the record carries the trust report
    assert writes[0].endswith("/skills/alpha")
    [summary] = [
        t
        for t in (await registry.status("acme")).materialization.targets
        if t.path == str(target.resolve())
    ]
    assert summary.trust is not None
    assert (summary.trust.state, summary.trust.seq) == ("verified", _told(target))
    remote.faults.seen.clear()
    await remote.once(target)
    assert remote.faults.seen == [("GET", "/v1/workspaces/acme/desired", 304)]
