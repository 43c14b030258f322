"""The package commands end to end: publish, show, get, list, demo, exit codes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from registry.cli.main import cli
from registry.cli.packages import example_root
from tests.support.cli import initialised, settings_env


@pytest.fixture
def run(tmp_path):
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'registry.db'}"
    return initialised(settings_env(database_url, tmp_path / "blobs"))


def _copy_example(name: str, dest: Path) -> Path:
    source = example_root() / name
    for path in source.rglob("*"):
        if path.is_file():
            target = dest / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
            target.chmod(path.stat().st_mode & 0o777)
    return dest


def test_version_and_help(run):
    assert "skillreg" in run("--version").output
    assert "publish" in run("--help").output


def test_commands_before_init_say_so_and_create_nothing(tmp_path):
    mistyped = tmp_path / "no" / "such" / "folder" / "fresh.db"
    for command in (["list", "-w", "acme"], ["publish", str(tmp_path), "-w", "acme"]):
        env = {
            "SKILLREG_DATABASE_URL": f"sqlite+aiosqlite:///{mistyped}",
            "SKILLREG_BLOB_URL": (tmp_path / "blobs").as_uri(),
        }
        result = CliRunner().invoke(cli, command, env=env)
        assert result.exit_code == 6
        assert f"no database at {mistyped}: run `skillreg init`" in result.output
        assert list(tmp_path.iterdir()) == []


def test_a_read_in_an_empty_folder_creates_no_registry(embedded):
    result = CliRunner().invoke(cli, ["list", "-w", "acme"])
    assert result.exit_code == 6
    assert "skillreg init" in result.output
    assert list(embedded.iterdir()) == []


def test_publish_show_get_round_trip_keeps_bytes_and_modes(run, tmp_path):
    skill = _copy_example("pdf-report", tmp_path / "src" / "pdf-report")
    published = run("publish", str(skill), "--workspace", "acme", "--expect-head", "new", "--json")
    assert published.exit_code == 0, published.output
    body = json.loads(published.output)
    assert (body["version"], body["created"]) == (1, True)

    shown = json.loads(run("show", "acme/pdf-report", "--json").output)
    assert shown["manifest_hash"] == body["manifest_hash"]
    assert {f["path"] for f in shown["files"]} == {
        "SKILL.md",
        "references/style-guide.md",
        "scripts/render.py",
        "templates/report.html",
    }

    out = tmp_path / "out"
    assert run("get", "acme/pdf-report@1", "--out", str(out)).exit_code == 0
    for path in skill.rglob("*"):
        if path.is_file():
            copy = out / path.relative_to(skill)
            assert copy.read_bytes() == path.read_bytes()
            assert os.access(copy, os.X_OK) == os.access(path, os.X_OK)


def test_stale_expect_head_exits_4_and_leaves_the_package(run, tmp_path):
    skill = _copy_example("csv-cleaner", tmp_path / "csv-cleaner")
    assert run("publish", str(skill), "-w", "acme", "--expect-head", "new").exit_code == 0
    (skill / "SKILL.md").write_text((skill / "SKILL.md").read_text() + "\nMore.\n")
    assert run("publish", str(skill), "-w", "acme", "--expect-head", "1").exit_code == 0
    before = json.loads(run("show", "acme/csv-cleaner", "--json").output)
    (skill / "references" / "rules.md").write_text("edited from an old copy\n")
    stale = run("publish", str(skill), "-w", "acme", "--expect-head", "1", "--json")
    assert stale.exit_code == 4
    error = json.loads(stale.output)
    assert error["error"] == "head_conflict"
    assert error["details"] == {"expected": 1, "current": 2}
    assert json.loads(run("show", "acme/csv-cleaner", "--json").output) == before


def test_exit_codes_for_not_found_and_usage(run):
    assert run("show", "acme/missing").exit_code == 5
    assert run("show", "not-a-ref").exit_code == 2
    assert run("show", "acme/x@zero").exit_code == 2
    assert run("list", "-w", "bad workspace!").exit_code == 2


def test_publish_ignores_git_and_skillregignore(run, tmp_path):
    skill = _copy_example("release-notes", tmp_path / "release-notes")
    (skill / ".git").mkdir()
    (skill / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (skill / "build").mkdir()
    (skill / "build" / "out.bin").write_bytes(b"\x00" * 10)
    (skill / "notes.tmp").write_text("scratch")
    (skill / ".skillregignore").write_text("# local junk\nbuild/\n*.tmp\n")
    # What machines and editors leave behind is skipped with no .skillregignore line.
    (skill / "scripts" / "__pycache__").mkdir(parents=True)
    (skill / "scripts" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\x00")
    for junk in (".DS_Store", "Thumbs.db", "old.pyc", ".SKILL.md.swp", "SKILL.md~"):
        (skill / junk).write_bytes(b"junk")
    body = json.loads(run("publish", str(skill), "-w", "acme", "--json").output)
    shown = json.loads(run("show", "acme/release-notes", "--json").output)
    paths = {f["path"] for f in shown["files"]}
    assert body["version"] == 1
    assert ".skillregignore" in paths
    skipped = {".git/", "build/", "notes.tmp", "scripts/__pycache__/", ".DS_Store"}
    skipped |= {"Thumbs.db", "old.pyc", ".SKILL.md.swp", "SKILL.md~"}
    assert set(body["skipped"]) == skipped
    assert not paths & {p.rstrip("/") for p in skipped}
    assert not {p for p in paths if p.startswith((".git/", "build/", "scripts/__pycache__/"))}
    (skill / "notes.tmp").write_text("changed")
    printed = run("publish", str(skill), "-w", "acme").output
    assert "skipped (ignored): " in printed
    assert "scripts/__pycache__/" in printed


def test_publish_refuses_a_symlink_in_the_folder(run, tmp_path):
    skill = _copy_example("release-notes", tmp_path / "release-notes")
    (skill / "link.md").symlink_to("/etc/passwd")
    result = run("publish", str(skill), "-w", "acme", "--json")
    assert result.exit_code == 3
    assert json.loads(result.output)["details"]["rule"] == "symlink"


def test_demo_publishes_the_examples_and_is_idempotent(run):
    first = json.loads(run("demo", "--json").output)
    assert set(first["published"]) == {"csv-cleaner", "pdf-report", "release-notes"}
    assert all(p["created"] for p in first["published"].values())
    second = json.loads(run("demo", "--json").output)
    assert all(p["unchanged"] for p in second["published"].values())
    listing = json.loads(run("list", "-w", "demo", "--json").output)
    assert [s["slug"] for s in listing["items"]] == ["csv-cleaner", "pdf-report", "release-notes"]


def test_messages_speak_to_a_person_not_to_the_code(embedded):
    initialised = " ".join(CliRunner().invoke(cli, ["init"]).output.split())
    assert "(schema version " in initialised
    assert "revision" not in initialised
    skill = embedded / "one-file"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: one-file\ndescription: One file.\n---\n\nHi.\n")
    published = CliRunner().invoke(cli, ["publish", str(skill), "-w", "acme"])
    assert "1 blob, " in " ".join(published.output.split()), published.output
    shutil.rmtree(embedded / ".skillreg" / "blobs")
    (skill / "SKILL.md").write_text("---\nname: one-file\ndescription: One file.\n---\n\nBye.\n")
    published = CliRunner().invoke(cli, ["publish", str(skill), "-w", "acme"])
    assert "(`skillreg init` does)" in " ".join(published.output.split()), published.output


def test_into_a_pipe_tables_are_tsv_and_nothing_is_cut(run, tmp_path):
    slug = "a-skill-whose-name-is-long-enough-that-a-table-would-cut-it"
    skill = _copy_example("release-notes", tmp_path / slug)
    text = (skill / "SKILL.md").read_text().replace("name: release-notes", f"name: {slug}")
    (skill / "SKILL.md").write_text(text)
    assert run("publish", str(skill), "-w", "acme").exit_code == 0
    listed = run("list", "-w", "acme").output  # click's runner is not a terminal
    assert listed.splitlines()[0].split("\t")[:2] == [slug, "1"]
    checked = run("fsck").output
    assert checked.splitlines()[0].startswith("fsck: 1 skill, 1 version, 1 manifest, ")
    assert checked.splitlines()[0].endswith(")")  # one line, not wrapped at 80 columns
