"""Lock files: canonical, checked when read, and reproducing the same bytes elsewhere."""

from __future__ import annotations

import json

import pytest

from registry.errors import LockFileInvalid, LockMismatch, NotInUse, VersionNotFound
from registry.services.materialize.lockfile import LockedSkill, LockFile
from tests.materialize.conftest import expected_files, publish
from tests.support.scopes import ACME
from tests.support.targets import load_skill, set_skill, tree_snapshot

HASH = "ab" * 32


def _lock(**changes):
    body = {
        "format": "skillreg-lock-v1",
        "workspace": "acme",
        "agent": "personal",
        "skills": [{"slug": "alpha", "version": 1, "manifest_hash": HASH}],
    }
    body.update(changes)
    return json.dumps(body)


def test_round_trip_is_canonical():
    lock = LockFile(
        "acme", "personal", (LockedSkill("beta", 2, HASH), LockedSkill("alpha", 1, HASH))
    )
    text = lock.dumps()
    assert LockFile.loads(text).dumps() == text
    assert [s["slug"] for s in json.loads(text)["skills"]] == ["alpha", "beta"]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("not json", "not_json"),
        (_lock(format="other"), "format"),
        (_lock(workspace="../x"), "scope"),
        (_lock(skills={}), "skills"),
        (_lock(skills=[{"slug": "Bad Slug", "version": 1, "manifest_hash": HASH}]), "slug"),
        (_lock(skills=[{"slug": "alpha", "version": 0, "manifest_hash": HASH}]), "version"),
        (_lock(skills=[{"slug": "alpha", "version": True, "manifest_hash": HASH}]), "version"),
        (_lock(skills=[{"slug": "alpha", "version": 1, "manifest_hash": "AB"}]), "manifest_hash"),
        (
            _lock(
                skills=[
                    {"slug": "alpha", "version": 1, "manifest_hash": HASH},
                    {"slug": "alpha", "version": 2, "manifest_hash": HASH},
                ]
            ),
            "duplicate_slug",
        ),
    ],
)
def test_malformed_lock_files_are_refused(text, rule):
    with pytest.raises(LockFileInvalid) as caught:
        LockFile.loads(text)
    assert caught.value.rule == rule


async def test_a_lock_file_reproduces_the_same_bytes_on_another_target(registry, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    await publish(registry, "alpha", tag="one")
    await publish(registry, "beta")
    await publish(registry, "gamma")
    await set_skill(registry, ACME, "gamma", use_paused=True)
    await registry.reconcile(ACME, first)
    lock = LockFile.loads((await registry.lock_file(ACME)).dumps())
    assert [(s.slug, s.version) for s in lock.skills] == [("alpha", 1), ("beta", 1)]

    await publish(registry, "alpha", tag="two")
    await publish(registry, "delta")
    report = await registry.reconcile(ACME, second, lock=lock)
    assert report.written == ["alpha", "beta"]
    for slug in ("alpha", "beta"):
        assert load_skill(second, slug) == load_skill(first, slug)
    assert load_skill(second, "alpha") == expected_files("alpha", tag="one")
    assert not (second / "delta").exists()
    # The first target, reconciled from the same lock, goes back to exactly that state.
    await registry.reconcile(ACME, first)
    assert load_skill(first, "delta") is not None
    back = await registry.reconcile(ACME, first, lock=lock)
    assert back.removed == ["delta"]
    assert sorted(p.name for p in first.iterdir()) == sorted(p.name for p in second.iterdir())
    for slug in ("alpha", "beta"):
        assert load_skill(first, slug) == load_skill(second, slug)
    snapshot = tree_snapshot(second)
    assert (await registry.reconcile(ACME, second, lock=lock)).unchanged == ["alpha", "beta"]
    assert tree_snapshot(second) == snapshot


async def test_a_lock_file_that_disagrees_with_the_registry_is_refused_per_skill(registry, target):
    await publish(registry, "alpha")
    await publish(registry, "beta")
    await publish(registry, "gamma")
    await set_skill(registry, ACME, "gamma", use_paused=True)
    real = await registry.lock_file(ACME)
    [alpha, beta] = real.skills
    lock = LockFile(
        "acme",
        "personal",
        (
            LockedSkill("alpha", 1, HASH),
            LockedSkill("beta", 7, beta.manifest_hash),
            LockedSkill("gamma", 1, alpha.manifest_hash),
        ),
    )
    report = await registry.reconcile(ACME, target, lock=lock)
    errors = {o.slug: type(o.error) for o in report.outcomes}
    assert errors == {"alpha": LockMismatch, "beta": VersionNotFound, "gamma": NotInUse}
    assert not [p for p in target.iterdir() if p.name != ".skillreg"]


async def test_a_lock_file_of_another_scope_or_with_adopt_is_refused(registry, target):
    other = LockFile("other", "personal", ())
    with pytest.raises(LockFileInvalid) as caught:
        await registry.reconcile(ACME, target, lock=other)
    assert caught.value.rule == "scope_mismatch"
    mine = LockFile("acme", "personal", ())
    with pytest.raises(LockFileInvalid) as caught:
        await registry.reconcile(ACME, target, lock=mine, adopt=True)
    assert caught.value.rule == "adopt_with_lock"
