"""Drift: every kind of on-disk change is detected by hash and repaired, in both modes.

Each case edits a materialised skill the way an agent or a person might, then checks that
reconcile reports it, restores the package byte for byte from the blob store, never
follows a planted link, and leaves everything outside the target exactly as it was.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.materialize.conftest import expected_files, publish
from tests.support.packages import package
from tests.support.scopes import ACME
from tests.support.targets import load_skill, tree_snapshot

MODES = ["link", "copy"]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Something outside the target that planted links point at."""
    root = tmp_path / "outside"
    (root / "dir").mkdir(parents=True)
    (root / "secret.txt").write_text("not yours")
    (root / "dir" / "keep.txt").write_text("keep me")
    return root


def _edit(skill: Path, outside: Path) -> None:
    (skill / "references" / "part-001.md").write_bytes(b"edited by an agent")


def _add(skill: Path, outside: Path) -> None:
    (skill / "notes.txt").write_text("new file")


def _remove(skill: Path, outside: Path) -> None:
    (skill / "references" / "part-001.md").unlink()


def _remove_only_file_of_folder(skill: Path, outside: Path) -> None:
    (skill / "scripts" / "run.py").unlink()  # `scripts/` stays, empty


def _replace_skill_md(skill: Path, outside: Path) -> None:
    temp = skill / "SKILL.md.new"
    temp.write_text("---\nname: alpha\ndescription: replaced\n---\n")
    temp.replace(skill / "SKILL.md")


def _mode(skill: Path, outside: Path) -> None:
    (skill / "scripts" / "run.py").chmod(0o644)


def _symlink_out(skill: Path, outside: Path) -> None:
    (skill / "references" / "evil.md").symlink_to(outside / "secret.txt")


def _symlink_over_dir(skill: Path, outside: Path) -> None:
    shutil.rmtree(skill / "references")
    (skill / "references").symlink_to(outside / "dir")


def _skill_md_symlink(skill: Path, outside: Path) -> None:
    (skill / "SKILL.md").unlink()
    (skill / "SKILL.md").symlink_to(outside / "secret.txt")


def _empty_dir(skill: Path, outside: Path) -> None:
    (skill / "assets" / "deep").mkdir(parents=True)


def _fifo(skill: Path, outside: Path) -> None:
    os.mkfifo(skill / "references" / "pipe")


def _same_size_same_mtime(skill: Path, outside: Path) -> None:
    path = skill / "references" / "part-001.md"
    before = path.stat()
    data = path.read_bytes()
    path.write_bytes(bytes(reversed(data)))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size


CASES: dict[str, tuple[Callable[[Path, Path], None], set[tuple[str, str]]]] = {
    "edited": (_edit, {("references/part-001.md", "modified")}),
    "added": (_add, {("notes.txt", "added")}),
    "removed": (_remove, {("references/part-001.md", "removed")}),
    # Reported once: the folder the package has is no addition (issue 15, item 11).
    "only_file_of_folder_removed": (_remove_only_file_of_folder, {("scripts/run.py", "removed")}),
    "skill_md_replaced": (_replace_skill_md, {("SKILL.md", "modified")}),
    "mode": (_mode, {("scripts/run.py", "mode")}),
    "symlink_out": (_symlink_out, {("references/evil.md", "symlink")}),
    "symlink_over_dir": (
        _symlink_over_dir,
        {
            ("references", "symlink"),
            ("references/part-001.md", "removed"),
            ("references/part-002.md", "removed"),
        },
    ),
    "skill_md_symlink": (_skill_md_symlink, {("SKILL.md", "symlink"), ("SKILL.md", "removed")}),
    "empty_dir": (_empty_dir, {("assets", "added")}),
    "fifo": (_fifo, {("references/pipe", "special")}),
    "same_size_same_mtime": (_same_size_same_mtime, {("references/part-001.md", "modified")}),
}


def _skill_dir(target: Path, slug: str) -> Path:
    """The folder an editor would touch: the real tree behind the link, or the copy."""
    return (target / slug).resolve()


# Detecting drift is a property of the files on disk: one database (as are the stat cache's
# tests below; a whole skill removed or replaced runs on both). Every case runs on the
# same target in turn; each repair is checked to leave the target clean (a second reconcile
# hashes nothing), so the next case starts from the materialised package again.
@pytest.mark.one_database
@pytest.mark.parametrize("mode", MODES)
async def test_every_drift_case_is_detected_and_repaired(registry, target, outside, mode):
    await publish(registry, "alpha")
    await publish(registry, "beta")
    await registry.reconcile(ACME, target, mode=mode)
    before_outside = tree_snapshot(outside)
    for case, (change, expected) in sorted(CASES.items()):
        change(_skill_dir(target, "alpha"), outside)

        report = await registry.reconcile(ACME, target)
        outcome = report.outcome("alpha")
        assert outcome.action == "repaired", (case, outcome)
        assert {(d.path, d.kind) for d in outcome.drift} == expected, case
        assert load_skill(target, "alpha") == expected_files("alpha"), case
        assert report.unchanged == ["beta"], case
        assert tree_snapshot(outside) == before_outside, case
        assert (outside / "secret.txt").read_text() == "not yours", case
        again = await registry.reconcile(ACME, target)
        assert again.unchanged == ["alpha", "beta"], case
        assert again.hashed == 0, case


@pytest.mark.parametrize("mode", MODES)
async def test_the_whole_skill_removed_or_replaced_is_repaired(registry, target, outside, mode):
    await publish(registry, "alpha")
    await publish(registry, "beta")
    await registry.reconcile(ACME, target, mode=mode)
    before_outside = tree_snapshot(outside)
    entry = target / "alpha"
    if entry.is_symlink():
        entry.unlink()
    else:
        shutil.rmtree(entry)
    (target / "beta").rename(target / "beta-moved")
    (target / "beta").symlink_to(outside / "dir")
    report = await registry.reconcile(ACME, target)
    assert [(d.path, d.kind) for d in report.outcome("alpha").drift] == [(".", "missing")]
    assert [d.kind for d in report.outcome("beta").drift] == ["replaced"]
    assert report.repaired == ["alpha", "beta"]
    for slug in ("alpha", "beta"):
        assert load_skill(target, slug) == expected_files(slug)
    assert tree_snapshot(outside) == before_outside


@pytest.mark.one_database
async def test_a_link_replaced_by_a_real_copy_is_turned_back_into_a_link(registry, target):
    await publish(registry, "alpha")
    await registry.reconcile(ACME, target)
    real = (target / "alpha").resolve()
    (target / "alpha").unlink()
    shutil.copytree(real, target / "alpha", symlinks=True)
    report = await registry.reconcile(ACME, target)
    assert [d.kind for d in report.outcome("alpha").drift] == ["replaced"]
    assert (target / "alpha").is_symlink()
    assert load_skill(target, "alpha") == expected_files("alpha")


@pytest.mark.one_database
@pytest.mark.parametrize("mode", MODES)
async def test_verify_rehashes_what_the_stat_cache_would_trust(registry, target, mode):
    await publish(registry, "alpha")
    await registry.reconcile(ACME, target, mode=mode)
    path = _skill_dir(target, "alpha") / "references" / "part-001.md"
    path.write_bytes(b"x" * path.stat().st_size)
    # Make the cache claim the edited file's stat, as a stat collision would.
    cache_file = target / ".skillreg" / "cache" / "alpha.json"
    cache = json.loads(cache_file.read_text())
    st = path.stat()
    stamp = cache["files"]["references/part-001.md"]
    cache["files"]["references/part-001.md"] = [
        stamp[0],
        st.st_size,
        stamp[2],
        st.st_ino,
        st.st_mtime_ns,
        st.st_ctime_ns,
    ]
    cache_file.write_text(json.dumps(cache))
    trusting = await registry.reconcile(ACME, target)
    assert trusting.unchanged == ["alpha"]
    assert trusting.hashed == 0
    verified = await registry.reconcile(ACME, target, verify=True)
    assert [(d.path, d.kind) for d in verified.outcome("alpha").drift] == [
        ("references/part-001.md", "modified")
    ]
    assert verified.hashed == len(expected_files("alpha"))
    assert load_skill(target, "alpha") == expected_files("alpha")


@pytest.mark.one_database
async def test_no_drift_costs_no_hashing(registry, target):
    for slug in ("alpha", "beta", "gamma", "delta"):
        await publish(registry, slug, package(slug, files=20))
    await registry.reconcile(ACME, target)
    again = await registry.reconcile(ACME, target)
    assert again.hashed == 0
    verified = await registry.reconcile(ACME, target, verify=True)
    assert verified.hashed == 4 * 21
    assert verified.unchanged == ["alpha", "beta", "delta", "gamma"]
