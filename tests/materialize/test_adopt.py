"""`adopt`: an edit found on disk becomes exactly one new version, through the write path."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from registry.db.tables import Version
from registry.errors import FrontmatterInvalid, HeadConflict
from tests.materialize.conftest import expected_files, publish
from tests.support.packages import as_bytes
from tests.support.scopes import ACME
from tests.support.targets import load_skill, rows

MODES = ["link", "copy"]


async def _versions(registry) -> list[tuple[int, str, str]]:
    async with registry.engine.connect() as conn:
        result = await conn.execute(
            sa.select(Version.number, Version.origin, Version.actor).order_by(Version.id)
        )
        return [tuple(r) for r in result]


def _skill_dir(target: Path, slug: str) -> Path:
    return (target / slug).resolve()


@pytest.mark.parametrize("mode", MODES)
async def test_adopt_creates_exactly_one_out_of_band_version(registry, target, mode):
    await publish(registry, "alpha")
    await registry.reconcile(ACME, target, mode=mode)
    skill = _skill_dir(target, "alpha")
    (skill / "references" / "part-001.md").write_text("improved by hand")
    (skill / "references" / "new.md").write_text("a new reference")
    (skill / "scripts" / "run.py").chmod(0o644)
    edited = load_skill(target, "alpha")

    report = await registry.reconcile(ACME, target, adopt=True, actor="ops")
    outcome = report.outcome("alpha")
    assert (outcome.action, outcome.version) == ("adopted", 2)
    assert {d.kind for d in outcome.drift} == {"modified", "added", "mode"}
    assert await _versions(registry) == [(1, "edit", "t"), (2, "out_of_band", "ops")]
    head = await registry.read_package(ACME, "alpha")
    assert as_bytes(head.files) == edited
    assert head.message.startswith("adopted from ")
    assert load_skill(target, "alpha") == edited
    [row] = await rows(registry, "materializations")
    assert (row["version"], row["manifest_hash"]) == (2, head.manifest.hash)

    again = await registry.reconcile(ACME, target, adopt=True)
    assert again.unchanged == ["alpha"]
    assert len(await _versions(registry)) == 2


async def test_adopt_never_takes_a_planted_link_into_a_version(registry, target, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("do not publish")
    await publish(registry, "alpha")
    await registry.reconcile(ACME, target)
    skill = _skill_dir(target, "alpha")
    (skill / "references" / "part-002.md").write_text("edited")
    (skill / "references" / "secret.md").symlink_to(secret)
    report = await registry.reconcile(ACME, target, adopt=True)
    assert report.outcome("alpha").action == "adopted"
    head = await registry.read_package(ACME, "alpha")
    assert "references/secret.md" not in head.files
    assert head.files["references/part-002.md"].data == b"edited"
    assert not (target / "alpha" / "references" / "secret.md").exists()
    assert secret.read_text() == "do not publish"


async def test_adopt_against_a_moved_head_is_a_conflict_and_the_edit_stays(registry, target):
    await publish(registry, "alpha", tag="one")
    await registry.reconcile(ACME, target)
    await publish(registry, "alpha", tag="two")
    skill = _skill_dir(target, "alpha")
    (skill / "references" / "part-001.md").write_text("edit of version 1")
    edited = load_skill(target, "alpha")

    report = await registry.reconcile(ACME, target, adopt=True)
    outcome = report.outcome("alpha")
    assert outcome.action == "failed"
    assert isinstance(outcome.error, HeadConflict)
    assert (outcome.error.expected, outcome.error.current) == (1, 2)
    assert load_skill(target, "alpha") == edited
    assert len(await _versions(registry)) == 2
    [pending] = (await registry.status("acme")).materialization.pending
    assert pending.error.startswith("head_conflict")

    # Without adopt, the default repair restores the head and the edit is gone.
    repaired = await registry.reconcile(ACME, target)
    assert repaired.outcome("alpha").action == "repaired"
    assert load_skill(target, "alpha") == expected_files("alpha", tag="two")


async def test_adopt_of_an_invalid_package_is_refused_and_nothing_changes(registry, target):
    await publish(registry, "alpha")
    await registry.reconcile(ACME, target)
    skill = _skill_dir(target, "alpha")
    (skill / "SKILL.md").write_text("no frontmatter any more")
    edited = load_skill(target, "alpha")
    report = await registry.reconcile(ACME, target, adopt=True)
    outcome = report.outcome("alpha")
    assert isinstance(outcome.error, FrontmatterInvalid)
    assert load_skill(target, "alpha") == edited
    assert len(await _versions(registry)) == 1


async def test_a_skill_removed_from_disk_is_restored_not_adopted(registry, target):
    await publish(registry, "alpha")
    await registry.reconcile(ACME, target)
    (target / "alpha").unlink()
    report = await registry.reconcile(ACME, target, adopt=True)
    assert report.repaired == ["alpha"]
    assert len(await _versions(registry)) == 1
    assert load_skill(target, "alpha") == expected_files("alpha")
