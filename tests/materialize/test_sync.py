"""`skillreg sync`: the reconciler over HTTP only, on SQLite and PostgreSQL behind the API.

The remote source feeds the same engine as reconcile: the same reports, the same disk, the
same records (so `status` shows remote targets); what is particular to it is the request
count (an unchanged registry costs one request) and the blob cache (only the blobs it does
not have are fetched).
"""

from __future__ import annotations

import json

import pytest

from registry.client import Backoff
from registry.errors import NotFound, TargetMismatch, Unauthenticated
from registry.services.materialize.lockfile import LockedSkill, LockFile
from tests.http.helpers import digest, raw
from tests.materialize.conftest import expected_files, publish
from tests.support.appserver import Rule
from tests.support.packages import package
from tests.support.scopes import ACME
from tests.support.targets import load_skill, rows, set_skill, tree_snapshot

DESIRED = "/desired"
BLOBS = "/blobs/"


def _digest(value) -> str:
    return digest(raw(value))


def _digests(*slugs: str) -> int:
    return len({_digest(v) for s in slugs for v in package(s).values()})


async def test_fills_a_target_over_http_and_status_shows_it(remote, target):
    for slug in ("alpha", "beta"):
        await publish(remote.registry, slug)
    report = await remote.once(target)
    assert report.written == ["alpha", "beta"]
    assert report.ok
    assert report.fetched == _digests("alpha", "beta")
    for slug in ("alpha", "beta"):
        assert str((target / slug).readlink()).startswith(f".skillreg/trees/{slug}/")
        assert load_skill(target, slug) == expected_files(slug)
    status = (await remote.registry.status("acme")).materialization
    [summary] = status.targets
    assert (summary.target_id, summary.path, summary.applied) == (
        report.target_id,
        str(target.resolve()),
        2,
    )
    assert not status.pending
    events = await rows(remote.registry, "events")
    kinds = [e["kind"] for e in events]
    assert kinds[-3:] == ["materialize_target_registered", "materialized", "materialized"]
    # The state was signed and verified, each version's attestation with it (docs/trust.md).
    assert summary.trust is not None
    assert (summary.trust.state, summary.trust.seq) == ("verified", events[-4]["id"])
    pinned = json.loads((target / ".skillreg" / "trust.json").read_bytes())
    assert len(pinned["verified"]) == 2


async def test_an_unchanged_registry_costs_one_request_and_writes_nothing(remote, target):
    for slug in ("alpha", "beta"):
        await publish(remote.registry, slug)
    await remote.once(target)
    await remote.once(target)  # the records changed since the first fetch: one full answer
    disk = tree_snapshot(target)
    events = await rows(remote.registry, "events")
    remote.faults.seen.clear()
    report = await remote.once(target)
    assert report.unchanged == ["alpha", "beta"]
    assert (report.fetched, report.hashed) == (0, 0)
    assert remote.faults.seen == [("GET", "/v1/workspaces/acme/desired", 304)]
    assert tree_snapshot(target) == disk
    assert await rows(remote.registry, "events") == events


@pytest.mark.parametrize("mode", ["link", "copy"])
async def test_a_new_version_fetches_only_the_blobs_that_changed(remote, target, mode):
    files = package("alpha", files=4)
    await publish(remote.registry, "alpha", files)
    await remote.once(target, mode=mode)
    changed = {**files, "references/part-002.md": b"a new part\n"}
    pub = await publish(remote.registry, "alpha", changed)
    remote.faults.seen.clear()
    report = await remote.once(target)
    assert report.written == ["alpha"]
    assert report.outcome("alpha").version == pub.version == 2
    assert report.fetched == 1
    assert remote.faults.count("GET", BLOBS) == 1
    assert load_skill(target, "alpha") == expected_files("alpha", files=4) | {
        "references/part-002.md": (b"a new part\n", False)
    }


async def test_drift_is_repaired_from_the_cache_without_fetching(remote, target):
    await publish(remote.registry, "alpha")
    await remote.once(target)
    (target / "alpha" / "SKILL.md").write_bytes(b"an agent rewrote this\n")
    (target / "alpha" / "notes.txt").write_bytes(b"planted\n")
    remote.faults.seen.clear()
    report = await remote.once(target)
    assert report.repaired == ["alpha"]
    kinds = {(d.path, d.kind) for d in report.outcome("alpha").drift}
    assert kinds == {("SKILL.md", "modified"), ("notes.txt", "added")}
    assert report.fetched == 0
    assert remote.faults.count("GET", BLOBS) == 0
    assert load_skill(target, "alpha") == expected_files("alpha")


def _cached(target) -> set[str]:
    return {p.name for p in (target / ".skillreg" / "blobs").rglob("*") if p.is_file()}


def _blobs(slug: str, tag: str) -> set[str]:
    return {_digest(v) for v in package(slug, tag=tag).values()}


async def test_the_blob_cache_keeps_the_desired_state_and_each_skills_version_before(
    remote, target
):
    """So a move back to the version held before (a revocation, a restore) fetches nothing."""
    await publish(remote.registry, "alpha", tag="one")
    await publish(remote.registry, "beta")
    await remote.once(target)
    await publish(remote.registry, "alpha", tag="two")
    await set_skill(remote.registry, ACME, "beta", use_paused=True)
    report = await remote.once(target)
    assert (report.written, report.removed) == (["alpha"], ["beta"])
    assert _cached(target) == _blobs("alpha", "two") | _blobs("alpha", "one") | _blobs("beta", "")
    await publish(remote.registry, "alpha", tag="three")
    await remote.once(target)
    assert _cached(target) == _blobs("alpha", "three") | _blobs("alpha", "two") | _blobs("beta", "")

    await remote.registry.yank(ACME, "alpha", 3, kind="broken", reason="crashes", actor="o")
    remote.faults.seen.clear()
    report = await remote.once(target)
    assert report.written == ["alpha"]
    assert load_skill(target, "alpha") == expected_files("alpha", tag="two")
    assert report.fetched == 0
    assert remote.faults.count("GET", BLOBS) == 0


@pytest.mark.parametrize("mode", ["link", "copy"])
async def test_reconcile_and_sync_drive_one_engine(remote, tmp_path, mode):
    """The same history, applied by both sources to two targets: the same reports and disk."""
    registry = remote.registry
    direct, synced = tmp_path / "direct", tmp_path / "synced"

    async def both(**options):
        a = await registry.reconcile(ACME, direct, **options)
        b = await remote.once(synced, **options)
        shape = [
            (o.slug, o.action, o.version, o.manifest_hash, o.previous_hash, o.drift, o.error_code)
            for o in a.outcomes
        ]
        assert shape == [
            (o.slug, o.action, o.version, o.manifest_hash, o.previous_hash, o.drift, o.error_code)
            for o in b.outcomes
        ]
        for slug in ("alpha", "beta", "gamma"):
            assert load_skill(direct, slug) == load_skill(synced, slug)
        return a

    for slug in ("alpha", "beta", "gamma"):
        await publish(registry, slug)
    assert (await both(mode=mode)).written == ["alpha", "beta", "gamma"]
    await publish(registry, "alpha", tag="two")
    await set_skill(registry, ACME, "beta", use_paused=True)
    for root in (direct, synced):
        (root / "gamma" / "references" / "part-001.md").write_bytes(b"edited\n")
    report = await both()
    assert (report.written, report.removed, report.repaired) == (["alpha"], ["beta"], ["gamma"])
    await registry.delete(ACME, "gamma", actor="t")
    assert (await both()).removed == ["gamma"]
    assert (await both()).unchanged == ["alpha"]
    status = (await registry.status("acme")).materialization
    assert {t.path for t in status.targets} == {str(direct.resolve()), str(synced.resolve())}
    assert not status.pending


async def test_a_lock_file_pins_versions_over_http(remote, target):
    await publish(remote.registry, "alpha")
    await publish(remote.registry, "beta")
    lock = await remote.registry.lock_file(ACME)
    await publish(remote.registry, "alpha", tag="two")
    report = await remote.once(target, lock=lock)
    assert report.written == ["alpha", "beta"]
    assert report.outcome("alpha").version == 1
    assert load_skill(target, "alpha") == expected_files("alpha")
    [pending] = (await remote.registry.status("acme")).materialization.pending
    assert (pending.slug, pending.desired_version, pending.applied_version) == ("alpha", 2, 1)

    assert (await remote.once(target, lock=lock)).unchanged == ["alpha", "beta"]
    remote.faults.seen.clear()
    again = await remote.once(target, lock=lock)
    assert again.unchanged == ["alpha", "beta"]
    statuses = [status for _, _, status in remote.faults.seen]
    assert statuses == [304, 304, 304]  # the desired state and each pin: conditional

    wrong = LockFile("acme", "personal", (LockedSkill("beta", 1, "0" * 64),))
    refused = await remote.once(target, lock=wrong)
    assert refused.failed.keys() == {"beta"}
    assert refused.outcome("beta").error_code == "lock_mismatch"
    assert refused.removed == ["alpha"]
    assert load_skill(target, "beta") == expected_files("beta")  # kept as it was


async def test_another_workspace_or_a_revoked_token_changes_nothing(remote, target):
    await publish(remote.registry, "alpha")
    other = await remote.new_token(workspace="globex")
    with pytest.raises(NotFound):
        await remote.once(target, token=other)
    assert not (target / "alpha").exists()

    issued = await remote.registry.tokens.create("acme", "read", actor="t")
    await remote.once(target, token=issued.token)
    await remote.registry.tokens.revoke(issued.info.id, actor="t")
    await publish(remote.registry, "alpha", tag="two")
    with pytest.raises(Unauthenticated):
        await remote.once(target, token=issued.token)
    assert load_skill(target, "alpha") == expected_files("alpha")


async def test_the_watch_loop_backs_off_with_jitter_and_resets(remote, target):
    await publish(remote.registry, "alpha")
    remote.faults.add(Rule("GET", DESIRED, status=503, times=2))
    delays: list[float] = []
    seen: list[str] = []

    class Stop(Exception):
        pass

    async def sleep(delay: float) -> None:
        delays.append(delay)
        if len(delays) == 4:
            raise Stop

    async with remote.sync(target) as syncer:
        with pytest.raises(Stop):
            await syncer.watch(
                backoff=Backoff(interval=10.0, first=1.0, cap=60.0),
                on_report=lambda r: seen.append(",".join(o.action for o in r.outcomes)),
                on_error=lambda e, _: seen.append(getattr(e, "code", "?")),
                sleep=sleep,
                draw=lambda: 0.5,
            )
    # Two failures (1 s, then 2 s, three quarters of each with draw 0.5), then converged
    # runs at the interval: equal jitter keeps half of each wait and spreads the rest.
    assert delays == [0.75, 1.5, 7.5, 7.5]
    assert seen == ["storage_unavailable", "storage_unavailable", "written", "unchanged"]


def test_backoff_doubles_up_to_its_cap_and_jitters_within_half():
    backoff = Backoff(interval=30.0, first=1.0, cap=8.0)
    assert [backoff.delay(n, lambda: 0.0) for n in range(6)] == [4.0, 0.5, 1.0, 2.0, 4.0, 4.0]
    assert [backoff.delay(n, lambda: 0.999999) for n in range(1, 6)] == pytest.approx(
        [1.0, 2.0, 4.0, 8.0, 8.0]
    )


async def test_the_watch_loop_stops_on_an_error_no_retry_fixes(remote, target):
    await publish(remote.registry, "alpha")
    await remote.once(target)

    async def sleep(_: float) -> None:
        raise AssertionError("a permanent error must not be retried")

    async with remote.sync(target, mode="copy") as syncer:
        with pytest.raises(TargetMismatch):
            await syncer.watch(
                backoff=Backoff(),
                on_report=lambda _: None,
                on_error=lambda *_: None,
                sleep=sleep,
            )
