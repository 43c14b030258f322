"""Sync under faults: the registry going away mid-sync, truncated and corrupted blobs, a token
revoked mid-sync, 5xx answers, a corrupted cache or desired state.

Every case: `alpha` and `beta` synced at version 1, then both updated; the fault hits the
update. The target must show each skill's old package or its new one, never a mix (a skill
the fault hit before its write keeps the old one), and once the fault is gone the next run
converges with nothing left pending. Faults are injected on the server (`Faults`) or timed
with failpoints; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from registry.errors import Inconsistency, StorageUnavailable
from tests.http.helpers import digest
from tests.materialize.conftest import expected_files, publish
from tests.support.appserver import Rule
from tests.support.faults import ScriptedFailpoints
from tests.support.scopes import ACME
from tests.support.targets import load_skill

SLUGS = ("alpha", "beta")

# Faults of the HTTP layer, the blobs and the target are `one_database`; the faults whose
# effect the database holds (a token revoked, a record that did not arrive) run on both.


async def _updated(remote, target) -> None:
    for slug in SLUGS:
        await publish(remote.registry, slug, tag="one")
    assert (await remote.once(target)).written == list(SLUGS)
    for slug in SLUGS:
        await publish(remote.registry, slug, tag="two")


def _old_or_new(target, slug: str) -> str:
    seen = load_skill(target, slug)
    for tag in ("one", "two"):
        if seen == expected_files(slug, tag=tag):
            return tag
    raise AssertionError(f"{slug} shows a package that was never published")


async def _converges(remote, target, **options) -> None:
    report = await remote.once(target, **options)
    assert report.ok, report.failed
    assert not report.repaired, "a fault's leftovers were reported as drift"
    for slug in SLUGS:
        assert _old_or_new(target, slug) == "two"
    assert not (await remote.registry.status("acme")).materialization.pending


def _failed_with(report, target, code: str) -> None:
    """Skills are synced side by side: which of them the fault caught depends on timing.

    The parked one has at least its record left to send, so it fails; the other may have
    finished before the fault. Every skill shows a whole package, old or new.
    """
    assert report.failed, "nothing failed"
    assert {report.outcome(slug).error_code for slug in report.failed} == {code}
    for slug in SLUGS:
        assert _old_or_new(target, slug) in {"one", "two"}


@pytest.mark.one_database
async def test_the_registry_going_away_mid_sync(remote, target):
    await _updated(remote, target)
    failpoints = ScriptedFailpoints()
    parked = failpoints.park("sync.blob_fetched")
    run = asyncio.create_task(remote.once(target, failpoints=failpoints))
    await parked.reached.wait()
    await remote.server.stop()
    parked.release.set()
    report = await run
    _failed_with(report, target, "storage_unavailable")

    await remote.server.start()  # the same address again
    await _converges(remote, target)


DAMAGES = {
    "truncated": lambda data: data[: len(data) // 2],
    "corrupted": lambda data: bytes([data[0] ^ 1]) + data[1:],
    "longer": lambda data: data + b"\n",
}


@pytest.mark.one_database
async def test_a_damaged_blob_is_refused_and_the_old_package_kept(remote, target):
    await _updated(remote, target)
    for case, damage in DAMAGES.items():
        remote.faults.clear()
        remote.faults.add(Rule("GET", "/blobs/", body=damage))
        report = await remote.once(target)
        assert report.failed.keys() == set(SLUGS), case
        assert {o.error_code for o in report.outcomes} == {"integrity_error"}, case
        for slug in SLUGS:
            assert _old_or_new(target, slug) == "one", case
        for cached in (target / ".skillreg" / "blobs").rglob("*"):
            if cached.is_file() and cached.parent.name != ".tmp":
                assert digest(cached.read_bytes()) == cached.name, f"{case}: damaged bytes cached"

    remote.faults.clear()
    await _converges(remote, target)


async def test_a_token_revoked_mid_sync(remote, target):
    issued = await remote.registry.tokens.create("acme", "read", actor="t")
    await _updated(remote, target)
    failpoints = ScriptedFailpoints()
    parked = failpoints.park("sync.blob_fetched")
    run = asyncio.create_task(remote.once(target, token=issued.token, failpoints=failpoints))
    await parked.reached.wait()
    await remote.registry.tokens.revoke(issued.info.id, actor="t")
    parked.release.set()
    report = await run
    _failed_with(report, target, "unauthenticated")

    await _converges(remote, target)  # with a token that works


@pytest.mark.one_database
async def test_5xx_answers_keep_the_old_package(remote, target):
    await _updated(remote, target)
    remote.faults.add(Rule("GET", "/blobs/", status=503))
    report = await remote.once(target)
    assert {o.error_code for o in report.outcomes} == {"storage_unavailable"}
    for slug in SLUGS:
        assert _old_or_new(target, slug) == "one"

    remote.faults.clear()
    remote.faults.add(Rule("GET", "/desired", status=500))
    with pytest.raises(StorageUnavailable):
        await remote.once(target)
    for slug in SLUGS:
        assert _old_or_new(target, slug) == "one"

    remote.faults.clear()
    await _converges(remote, target)


async def test_a_record_that_fails_after_the_write_is_completed_next_time(remote, target):
    await _updated(remote, target)
    remote.faults.add(Rule("PUT", "/skills/alpha", status=502))
    report = await remote.once(target)
    assert report.failed.keys() == {"alpha"}
    assert report.outcome("alpha").error_code == "storage_unavailable"
    assert _old_or_new(target, "alpha") == "two"  # written; only its record is missing
    [pending] = (await remote.registry.status("acme")).materialization.pending
    assert (pending.slug, pending.applied_version) == ("alpha", 1)

    remote.faults.clear()
    again = await remote.once(target)
    assert again.written == ["alpha"]  # recorded now, nothing rewritten
    assert again.fetched == 0
    await _converges(remote, target)


@pytest.mark.one_database
async def test_a_damaged_cache_entry_is_fetched_again(remote, target):
    await publish(remote.registry, "alpha")
    await remote.once(target)
    skill_md = target / ".skillreg" / "blobs"
    [cached] = [
        p
        for p in skill_md.rglob("*")
        if p.is_file() and p.read_bytes() == expected_files("alpha")["SKILL.md"][0]
    ]
    cached.chmod(0o644)
    cached.write_bytes(b"rotten")
    (target / "alpha" / "SKILL.md").write_bytes(b"edited\n")
    report = await remote.once(target)
    assert report.repaired == ["alpha"]
    assert report.fetched == 1
    assert load_skill(target, "alpha") == expected_files("alpha")


@pytest.mark.one_database
async def test_a_desired_state_that_does_not_hash_is_refused(remote, target):
    await _updated(remote, target)

    def tamper(data: bytes) -> bytes:
        body = json.loads(data)
        body["skills"][0]["files"][0]["size"] += 1
        return json.dumps(body).encode()

    remote.faults.add(Rule("GET", "/desired", body=tamper))
    with pytest.raises(Inconsistency):
        await remote.once(target)
    for slug in SLUGS:
        assert _old_or_new(target, slug) == "one"
    remote.faults.clear()
    await _converges(remote, target)


@pytest.mark.one_database
async def test_a_cancelled_sync_finishes_its_step_and_converges(remote, target):
    await _updated(remote, target)
    failpoints = ScriptedFailpoints()
    parked = failpoints.park("materialize.tree_synced")
    run = asyncio.create_task(remote.once(target, failpoints=failpoints))
    await parked.reached.wait()
    run.cancel()
    parked.release.set()
    with pytest.raises(asyncio.CancelledError):
        await run
    for slug in SLUGS:
        assert _old_or_new(target, slug) in {"one", "two"}
    await _converges(remote, target, wait=True)


@pytest.mark.one_database
async def test_a_pinned_version_that_does_not_hash_fails_its_skill_and_is_not_kept(remote, target):
    await _updated(remote, target)
    lock = await remote.registry.lock_file(ACME)

    def tamper(data: bytes) -> bytes:
        body = json.loads(data)
        body["files"][0]["size"] += 1
        return json.dumps(body).encode()

    remote.faults.add(Rule("GET", "/versions/", body=tamper, times=1))
    report = await remote.once(target, lock=lock)
    [(slug, _)] = report.failed.items()
    assert report.outcome(slug).error_code == "integrity_error"
    assert _old_or_new(target, slug) == "one"
    await _converges(remote, target, lock=lock)  # asked again: the damaged answer was not kept
