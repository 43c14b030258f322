"""The materialisation commands end to end, through the `skillreg` command line."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from registry.cli.packages import example_root
from registry.db.tables import Materialization, MaterializationTarget
from tests.support.cli import database_options, run, run_json, tree

EXAMPLES = sorted(p.name for p in example_root().iterdir() if p.is_dir())


@pytest.fixture
def on_database(database_url, tmp_path):
    """Global options pointing the command line at the test's database (both kinds)."""
    return database_options(database_url, tmp_path / "blobs")


def test_must_show_fill_a_target_report_and_repair_an_edit(embedded):
    """The issue's "Must show", on the embedded default."""
    run("init")
    run("demo", "-w", "demo")
    report = run_json("reconcile", "--workspace", "demo", "--target", "skills")
    assert report["written"] == EXAMPLES
    for slug in EXAMPLES:
        assert tree(embedded / "skills" / slug) == tree(example_root() / slug)

    listing = subprocess.run(
        ["ls", "-l", "skills"], capture_output=True, text=True, check=True
    ).stdout.splitlines()[1:]
    assert len(listing) == len(EXAMPLES)
    for line, slug in zip(listing, EXAMPLES, strict=True):
        assert line.startswith("l"), line  # one link per skill, swapped in one rename
        assert f" {slug} -> .skillreg/trees/{slug}/" in line

    edited = embedded / "skills" / "pdf-report" / "references" / "style-guide.md"
    edited.write_text("an agent rewrote this\n")
    human = run("reconcile", "--workspace", "demo", "--target", "skills")
    assert "repaired" in human
    assert "modified: references/style-guide.md" in human
    assert tree(embedded / "skills" / "pdf-report") == tree(example_root() / "pdf-report")
    again = run_json("reconcile", "--workspace", "demo", "--target", "skills")
    assert again["unchanged"] == EXAMPLES
    assert again["hashed"] == 0
    assert "nothing pending" in run("status")


def test_lock_then_reproduce_on_another_target(on_database, tmp_path):
    run(*on_database, "init")
    run(*on_database, "demo", "-w", "demo")
    first, second, lock = tmp_path / "first", tmp_path / "second", tmp_path / "demo.lock"
    run_json(*on_database, "reconcile", "-w", "demo", "-t", first)
    written = run_json(*on_database, "lock", "-w", "demo", "--out", lock)
    assert written["skills"] == len(EXAMPLES)
    printed = run(*on_database, "lock", "-w", "demo")
    assert printed == lock.read_text()
    report = run_json(*on_database, "reconcile", "-w", "demo", "-t", second, "--lock", lock)
    assert report["written"] == EXAMPLES
    for slug in EXAMPLES:
        assert tree(second / slug) == tree(first / slug)
    status = run_json(*on_database, "status", "-w", "demo")
    assert len(status["materialization"]["targets"]) == 2
    assert status["materialization"]["pending"] == []


def test_exit_codes(on_database, tmp_path):
    run(*on_database, "init")
    run(*on_database, "demo", "-w", "demo")
    target = tmp_path / "target"
    run(*on_database, "reconcile", "-w", "demo", "-t", target)

    lock = tmp_path / "bad.lock"
    lock.write_text("{}")
    bad = run_json(*on_database, "reconcile", "-w", "demo", "-t", target, "--lock", lock, code=3)
    assert bad["error"] == "lock_file_invalid"
    run(*on_database, "reconcile", "-w", "demo", "-t", target, "--adopt", "--lock", lock, code=2)
    other = run_json(*on_database, "reconcile", "-w", "other", "-t", target, code=4)
    assert other["error"] == "target_mismatch"

    # An edit to version 1 while the head moved on: adopting it is a conflict (exit 4),
    # reported per skill in the full report, and the edit stays on disk.
    skill = tmp_path / "csv-cleaner"
    shutil.copytree(example_root() / "csv-cleaner", skill)
    (skill / "references" / "rules.md").write_text("version 2\n")
    run(*on_database, "publish", skill, "-w", "demo", "--expect-head", "1")
    edited = target / "csv-cleaner" / "SKILL.md"
    edited.write_text(edited.read_text() + "\nlocal note\n")
    report = run_json(*on_database, "reconcile", "-w", "demo", "-t", target, "--adopt", code=4)
    assert list(report["failed"]) == ["csv-cleaner"]
    [failed] = [s for s in report["skills"] if s["action"] == "failed"]
    assert failed["error_code"] == "head_conflict"
    assert edited.read_text().endswith("local note\n")
    pending = run_json(*on_database, "status", "-w", "demo")["materialization"]["pending"]
    assert [(p["slug"], p["desired_version"], p["applied_version"]) for p in pending] == [
        ("csv-cleaner", 2, 1)
    ]
    repaired = run_json(*on_database, "reconcile", "-w", "demo", "-t", target)
    assert repaired["repaired"] == ["csv-cleaner"]
    assert tree(target / "csv-cleaner") == tree(skill)


def test_a_misspelt_workspace_binds_nothing_and_a_binding_can_be_forgotten(on_database, tmp_path):
    """Issue 15, item 10: a scope with no skills and no history needs --create."""
    run(*on_database, "init")
    run(*on_database, "demo", "-w", "demo")
    target = tmp_path / "skills"
    refused = run_json(*on_database, "reconcile", "-w", "nosuch", "-t", target, code=5)
    assert refused["error"] == "scope_not_found"
    assert "--create" in refused["message"]
    assert not target.exists()  # nothing created, nothing bound
    # The mistake made anyway: --create binds the target to the empty scope ...
    created = run_json(*on_database, "reconcile", "-w", "nosuch", "-t", target, "--create")
    assert created["skills"] == []
    mismatch = run_json(*on_database, "reconcile", "-w", "demo", "-t", target, code=4)
    assert mismatch["error"] == "target_mismatch"
    # ... and undone: the target forgotten, the corrected command works.
    forgotten = run_json(*on_database, "target", "forget", target)
    assert (forgotten["workspace"], forgotten["removed"]) == ("nosuch", [])
    assert not (target / ".skillreg").exists()
    report = run_json(*on_database, "reconcile", "-w", "demo", "-t", target)
    assert report["written"] == EXAMPLES
    # The binding forgotten, nothing names the misspelt workspace any more.
    gone = run_json(*on_database, "status", "-w", "nosuch", code=5)
    assert gone["error"] == "workspace_not_found"


def test_forgetting_a_target_removes_what_reconcile_put_there_and_its_records(
    on_database, tmp_path
):
    run(*on_database, "init")
    run(*on_database, "demo", "-w", "demo")
    target = tmp_path / "skills"
    run_json(*on_database, "reconcile", "-w", "demo", "-t", target, "--mode", "copy")
    (target / "notes.txt").write_text("mine\n")
    forgotten = run_json(*on_database, "target", "forget", target)
    assert forgotten["removed"] == EXAMPLES
    assert forgotten["records"] == len(EXAMPLES)
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]
    assert run_json(*on_database, "status", "-w", "demo")["materialization"]["targets"] == []
    missing = run(*on_database, "target", "forget", tmp_path / "elsewhere", code=2)
    assert "does not exist" in missing  # a usage error, as for every folder a command reads
    (tmp_path / "plain").mkdir()
    plain = run_json(*on_database, "target", "forget", tmp_path / "plain", code=3)
    assert plain["error"] == "target_invalid"


def test_status_shows_stored_control_and_bidi_characters_escaped(
    on_database, database_url, tmp_path
):
    # Rows written before the rule for text a client sets (or by hand) may hold escape
    # sequences: `status` showed a read token's error raw (clearing the screen, setting
    # the window title, planting a hyperlink) and a path that read backwards.
    run(*on_database, "init")
    run(*on_database, "demo", "-w", "demo")
    run_json(*on_database, "reconcile", "-w", "demo", "-t", tmp_path / "skills")
    error = "\x1b[2J\x1b]0;owned\x07\x1b]8;;https://example.invalid\x07click\x1b]8;;\x07 [red]x"

    async def poke() -> None:
        engine = create_async_engine(database_url)
        async with engine.begin() as conn:
            await conn.execute(sa.update(MaterializationTarget).values(path="/srv/\u202eexe.txt"))
            await conn.execute(
                sa.update(Materialization)
                .where(Materialization.slug == EXAMPLES[0])
                .values(outcome="failed", manifest_hash=None, version=None, error=error)
            )
        await engine.dispose()

    asyncio.run(poke())
    shown = run(*on_database, "status", "-w", "demo")
    assert "\x1b" not in shown
    assert "\u202e" not in shown
    assert "\\u001b[2J" in shown.replace("\n", "")
    assert "\\u202e" in shown
    assert "[red]x" in shown.replace("\n", "")  # markup in stored text is text
