"""The history commands end to end, through the `skillreg` command line."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from registry.cli.main import cli
from registry.cli.packages import example_root
from tests.support.cli import database_options, run, run_json, tree

SKILLREG = str(Path(sys.executable).with_name("skillreg"))


def test_publish_three_versions_then_history_diff_restore_and_get_byte_for_byte(embedded):
    run("init")
    skill = embedded / "pdf-report"
    shutil.copytree(example_root() / "pdf-report", skill)
    original = tree(skill)
    run("publish", skill, "-w", "acme", "-m", "first")
    (skill / "SKILL.md").write_bytes((skill / "SKILL.md").read_bytes() + b"\nA second thought.\n")
    (skill / "references" / "extra.md").write_text("more\n")
    run("publish", skill, "-w", "acme", "-m", "second")
    (skill / "references" / "extra.md").unlink()
    (skill / "scripts" / "render.py").write_text("print('rewritten')\n")
    run("publish", skill, "-w", "acme", "-m", "third")

    history = run_json("history", "acme/pdf-report")
    assert [(v["number"], v["message"]) for v in history["items"]] == [
        (3, "third"),
        (2, "second"),
        (1, "first"),
    ]
    assert "first" in run("history", "acme/pdf-report")

    diff = run_json("diff", "acme/pdf-report", 1, 3)
    assert {f["path"]: f["status"] for f in diff["files"]} == {
        "SKILL.md": "changed",
        "scripts/render.py": "changed",
    }
    preview = run("diff", "acme/pdf-report", 1, 3)
    assert "+A second thought." in preview
    assert "more lines (--full shows all)" in preview
    assert "+print('rewritten')" in run("diff", "acme/pdf-report", 1, 3, "--full")

    restored = run_json("restore", "acme/pdf-report", 1, "--expect-head", 3)
    assert (restored["version"], restored["restored_from"], restored["uploaded"]) == (4, 1, 0)
    run("get", "acme/pdf-report", "--out", embedded / "v4")
    assert tree(embedded / "v4") == original
    run("get", "acme/pdf-report@1", "--out", embedded / "v1")
    assert tree(embedded / "v1") == original


@pytest.mark.both_databases
def test_controls_proposals_and_exclusion_through_the_cli(database_url, tmp_path):
    base = database_options(database_url, tmp_path / "blobs")
    run(*base, "init")
    skill = tmp_path / "csv-cleaner"
    shutil.copytree(example_root() / "csv-cleaner", skill)
    run(*base, "publish", skill, "-w", "acme", "--source", "chat:1")
    run(*base, "auto-improve", "acme/csv-cleaner", "off")
    (skill / "SKILL.md").write_bytes((skill / "SKILL.md").read_bytes() + b"\nLearned.\n")
    learned = run_json(
        *base, "publish", skill, "-w", "acme", "--origin", "learning", "--source", "job:9"
    )
    proposal = learned["proposal"]
    assert proposal is not None
    listed = run_json(*base, "proposals", "list", "-w", "acme")
    assert [p["id"] for p in listed["items"]] == [proposal]
    shown = run_json(*base, "proposals", "show", "-w", "acme", proposal)
    assert [f["path"] for f in shown["diff_base"]] == ["SKILL.md"]
    assert "Learned." in run(*base, "diff", "acme/csv-cleaner", 1, f"p{proposal}")
    assert run_json(*base, "state", "acme/csv-cleaner")["state"] == "needs_decision"
    decided = run_json(*base, "proposals", "decide", "-w", "acme", proposal, "apply")
    assert decided["publication"]["version"] == 2

    assert run_json(*base, "pause", "acme/csv-cleaner", "--reason", "r")["learning_paused"]
    refused = run_json(*base, "pause", "acme/csv-cleaner", code=4)
    assert (refused["error"], refused["details"]["state"]) == ("state_conflict", "paused_learning")
    assert not run_json(*base, "resume", "acme/csv-cleaner")["learning_paused"]
    assert run_json(*base, "stop-using", "acme/csv-cleaner")["use_paused"]
    assert not run_json(*base, "resume-use", "acme/csv-cleaner")["use_paused"]

    report = run_json(*base, "exclude-source", "-w", "acme", "job:9")
    assert [(r["slug"], r["outcome"], r["restored_from"]) for r in report["repairs"]] == [
        ("csv-cleaner", "rolled_back", 1)
    ]
    missing = run_json(*base, "show", "acme/csv-cleaner@2", code=5)
    assert missing["error"] == "version_unavailable"

    run_json(*base, "delete", "acme/csv-cleaner", "--yes")
    assert run_json(*base, "history", "acme/csv-cleaner", code=5)["error"] == "skill_not_found"
    archived = run_json(*base, "history", "acme/csv-cleaner", "--archived")
    assert all(v["archived"] for v in archived["items"])
    assert run_json(*base, "restore", "other/csv-cleaner", 1, "--expect-head", 1, code=5)


def test_delete_asks_on_a_terminal_refuses_without_one_and_compares_the_head(
    embedded, monkeypatch, capsys
):
    run("init")
    run("demo", "-w", "acme")
    # Without a terminal and without --yes nothing can confirm: refused, nothing changed.
    refused = run("delete", "acme/csv-cleaner", code=2)
    assert "pass --yes" in refused
    assert run_json("delete", "acme/csv-cleaner", "--expect-head", 7, "--yes", code=4)
    # On a terminal (a pseudo-terminal here) it asks; "n" keeps the skill: in-process,
    # with the terminal as standard input.
    leader, follower = pty.openpty()
    with os.fdopen(follower, encoding="utf-8") as terminal, monkeypatch.context() as patch:
        patch.setattr(sys, "stdin", terminal)
        os.write(leader, b"n\n")
        with pytest.raises(SystemExit) as ended:
            cli.main(["delete", "acme/csv-cleaner", "--expect-head", "1"], prog_name="skillreg")
    os.close(leader)
    printed = capsys.readouterr()
    assert ended.value.code == 0, printed
    assert "Delete acme/csv-cleaner (head version 1)?" in printed.err
    assert "not deleted" in printed.out
    assert "items" in run_json("history", "acme/csv-cleaner")
    # "y" deletes it: the real binary, its standard input and error the terminal.
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [SKILLREG, "delete", "acme/csv-cleaner", "--expect-head", "1"],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=follower,
        cwd=embedded,
    )
    os.close(follower)
    asked = b""
    while b"Delete acme/csv-cleaner (head version 1)?" not in asked:
        asked += os.read(leader, 1024)
    os.write(leader, b"y\n")
    out, _ = process.communicate(timeout=120)
    os.close(leader)
    assert process.returncode == 0
    assert "not deleted" not in out.decode()
    assert run_json("history", "acme/csv-cleaner", code=5)["error"] == "skill_not_found"


def test_a_deleted_skill_is_read_compared_and_brought_back_by_its_id(embedded):
    run("init")
    skill = embedded / "pdf-report"
    shutil.copytree(example_root() / "pdf-report", skill)
    original = tree(skill)
    run("publish", skill, "-w", "acme", "-m", "first")
    (skill / "SKILL.md").write_bytes((skill / "SKILL.md").read_bytes() + b"\nA second thought.\n")
    run("publish", skill, "-w", "acme", "-m", "second")
    run("delete", "acme/pdf-report", "--yes")
    run("publish", skill, "-w", "acme", "-m", "a new skill, same slug")

    listed = run_json("history", "acme/pdf-report", "--archived")
    old = {v["skill_id"] for v in listed["items"] if v["archived"]}
    assert len(old) == 1
    (old_id,) = old
    assert f"archived, pdf-report~{old_id}" in run("history", "acme/pdf-report", "--archived")
    shown = run_json("show", f"acme/pdf-report~{old_id}@1")
    assert (shown["version"], shown["head"], shown["archived"]) == (1, 2, True)
    run("get", "acme/pdf-report@1", "--archived", "--out", embedded / "old-v1")
    assert tree(embedded / "old-v1") == original
    diff = run_json("diff", "acme/pdf-report", f"~{old_id}@1", 1)
    assert [f["path"] for f in diff["files"]] == ["SKILL.md"]

    # The slug is the new skill's: refused, exit 4, naming it.
    taken = run_json("restore", f"acme/pdf-report~{old_id}", 1, "--expect-head", 2, code=4)
    assert (taken["error"], taken["details"]["skill_id"]) == ("slug_taken", old_id)
    run("delete", "acme/pdf-report", "--yes")
    ambiguous = run_json("show", "acme/pdf-report@1", "--archived", code=4)
    assert ambiguous["error"] == "archived_skill_ambiguous"
    back = run_json("restore", f"acme/pdf-report~{old_id}", 1, "--expect-head", 2)
    assert (back["version"], back["restored_from"], back["revived"]) == (3, 1, True)
    run("get", "acme/pdf-report", "--out", embedded / "back")
    assert tree(embedded / "back") == original
