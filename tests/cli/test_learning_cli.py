"""The learning rules through `skillreg`, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from registry.cli.main import cli
from registry.domain.model import as_package_file
from registry.services.materialize.folder import write_folder
from tests.support.cli import database_options, run, run_json
from tests.support.history import github_token
from tests.support.learning import learned, learned_md, prose
from tests.support.packages import SLUG, package

LEARN = ("--origin", "learning", "--actor", "job")


@pytest.fixture
def base(database_url, tmp_path):
    options = database_options(database_url, tmp_path / "blobs")
    run(*options, "init")
    return options


def folder(root: Path, name: str, files) -> Path:
    target = root / name
    if target.exists():
        for path in sorted(target.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
    write_folder(target, {p: as_package_file(v) for p, v in files.items()})
    return target


def test_a_cli_edit_turns_automatic_improvements_off_unless_kept(base, tmp_path):
    skill = folder(tmp_path / "a", SLUG, learned(text="1"))
    run_json(*base, "publish", skill, "-w", "acme", "--expect-head", "new")
    skill = folder(tmp_path / "a", SLUG, learned(text="2"))
    run_json(*base, "publish", skill, "-w", "acme", "--keep-auto-improve")
    assert run_json(*base, "state", f"acme/{SLUG}")["auto_improve"]
    skill = folder(tmp_path / "a", SLUG, learned(text="3"))
    assert run_json(*base, "publish", skill, "-w", "acme", *LEARN)["version"] == 3
    skill = folder(tmp_path / "a", SLUG, learned(text="4"))
    run_json(*base, "publish", skill, "-w", "acme")
    assert not run_json(*base, "state", f"acme/{SLUG}")["auto_improve"]
    skill = folder(tmp_path / "a", SLUG, learned(text="5"))
    proposed = run_json(*base, "publish", skill, "-w", "acme", *LEARN)
    assert (proposed["proposal_kind"], proposed["version"]) == ("learning", 4)
    assert "recorded as learning proposal" in run(
        *base, "publish", folder(tmp_path / "a", SLUG, learned(text="6")), "-w", "acme", *LEARN
    )


def test_an_imported_skill_needs_the_owners_decision(base, tmp_path):
    skill = folder(tmp_path / "a", SLUG, learned(text="1"))
    run_json(*base, "publish", skill, "-w", "acme", "--origin", "import")
    skill = folder(tmp_path / "a", SLUG, learned(text="2"))
    assert run_json(*base, "publish", skill, "-w", "acme", *LEARN)["proposal"] is not None


def test_a_learned_skill_without_steps_is_refused_with_exit_3(base, tmp_path):
    skill = folder(tmp_path / "a", SLUG, {"SKILL.md": learned_md(sections="")})
    refused = run_json(*base, "publish", skill, "-w", "acme", *LEARN, code=3)
    assert (refused["error"], refused["details"]["section"]) == ("learning_incomplete", "Steps")
    assert run_json(*base, "list", "-w", "acme", code=5)["error"] == "workspace_not_found"


def test_restore_and_delete_suppress_and_decisions_are_taken_in_a_batch(base, tmp_path):
    ref = f"acme/{SLUG}"
    v1, v2 = learned(text=prose(1)), learned(text=prose(1) + " " + prose(2, 20), script=b"2\n")
    run_json(
        *base, "publish", folder(tmp_path / "a", SLUG, v1), "-w", "acme", "--keep-auto-improve"
    )
    run_json(*base, "publish", folder(tmp_path / "a", SLUG, v2), "-w", "acme", *LEARN)
    run_json(*base, "restore", ref, 1, "--expect-head", 2)
    (suppressed,) = run_json(*base, "suppressions", "list", "-w", "acme")["items"]
    assert (suppressed["cause"], suppressed["undone_version"]) == ("restore", 2)
    again = run_json(*base, "publish", folder(tmp_path / "a", SLUG, v2), "-w", "acme", *LEARN)
    assert again["proposal_kind"] == "suppressed"
    listed = run_json(*base, "decisions", "list", "-w", "acme", "--kind", "suppressed")
    assert [d["id"] for d in listed["items"]] == [again["proposal"]]
    assert "suppressed" in run(*base, "decisions", "list", "-w", "acme")
    decided = run_json(
        *base,
        "decisions",
        "decide",
        "-w",
        "acme",
        "--keep",
        again["proposal"],
        "--apply",
        999,
        code=4,
    )
    # Applies first, then keeps; the missing proposal fails alone.
    assert [(o["ok"], o["status"]) for o in decided["outcomes"]] == [
        (False, None),
        (True, "rejected"),
    ]
    lifted = run_json(*base, "suppressions", "lift", "-w", "acme", suppressed["id"])
    assert lifted["status"] == "lifted"
    run_json(*base, "delete", ref, "--yes")
    deleted = run_json(*base, "suppressions", "list", "-w", "acme")["items"]
    assert [s["cause"] for s in deleted] == ["delete"]
    back = run_json(*base, "publish", folder(tmp_path / "a", SLUG, v1), "-w", "acme", *LEARN)
    assert (back["proposal_kind"], back["version"]) == ("suppressed", 0)
    applied = run_json(*base, "decisions", "decide", "-w", "acme", "--apply", back["proposal"])
    assert applied["outcomes"][0]["publication"]["version"] == 1


def test_pending_writes_wait_for_room_and_the_owner_drops_one(database_url, tmp_path):
    env = {
        "SKILLREG_DATABASE_URL": database_url,
        "SKILLREG_BLOB_URL": (tmp_path / "blobs").as_uri(),
        "SKILLREG_CAPACITY_SAVED": "1",
    }
    runner = CliRunner()

    def sk(*args, code=0):
        result = runner.invoke(cli, [str(a) for a in args], env=env, catch_exceptions=False)
        assert result.exit_code == code, result.output
        return json.loads(result.output) if "--json" in args else result.output

    sk("init")
    sk("publish", folder(tmp_path / "a", "kept", package("kept")), "-w", "acme", "--json")
    first = sk(
        "publish", folder(tmp_path / "b", "first", learned("first")), "-w", "acme", *LEARN, "--json"
    )
    second = sk(
        "publish",
        folder(tmp_path / "c", "second", learned("second")),
        "-w",
        "acme",
        *LEARN,
        "--json",
    )
    assert (first["pending"] is not None, first["version"]) == (True, 0)
    waiting = sk("pending", "list", "-w", "acme", "--json")["items"]
    assert [w["slug"] for w in waiting] == ["first", "second"]
    assert "waiting" in sk("pending", "list", "-w", "acme")
    sk("pending", "drop", "-w", "acme", second["pending"], "--json")
    sk("pending", "drop", "-w", "acme", second["pending"], "--json", code=4)
    sk("delete", "acme/kept", "--yes", "--json")
    assert sk("show", "acme/first", "--json")["version"] == 1
    closed = sk("pending", "list", "-w", "acme", "--all", "--json")["items"]
    assert [(w["slug"], w["status"]) for w in closed] == [
        ("first", "applied"),
        ("second", "dropped"),
    ]
    assert sk("pending", "apply", "-w", "acme", "--json")["items"] == []
    status = sk("status", "-w", "acme", "--json")
    assert status["learning"][0]["pending_writes"] == 0
    assert "learning" in sk("status", "-w", "acme")


def test_triggers_unicode_slugs_and_the_top_level_triggers_refusal(base, tmp_path):
    md = (
        "---\nname: café-notes\ndescription: Notes.\nmetadata:\n  triggers: |\n"
        "    take notes\n    summarise notes\n---\n\nbody\n"
    )
    skill = folder(tmp_path / "a", "café-notes", {"SKILL.md": md.encode()})
    run_json(*base, "publish", skill, "-w", "acme")
    triggers = ["take notes", "summarise notes"]
    assert run_json(*base, "show", "acme/café-notes")["triggers"] == triggers
    assert run_json(*base, "list", "-w", "acme")["items"][0]["triggers"] == triggers
    assert run_json(*base, "state", "acme/café-notes")["triggers"] == triggers
    assert "take notes; summarise notes" in run(*base, "show", "acme/café-notes")
    bad = folder(
        tmp_path / "b",
        SLUG,
        {"SKILL.md": b"---\nname: pdf-report\ndescription: d\ntriggers: x\n---\n"},
    )
    refused = run_json(*base, "publish", bad, "-w", "acme", code=3)
    assert refused["details"]["rule"] == "unknown_field"
    assert "metadata" in refused["details"]["detail"]


def test_a_refused_write_lists_its_findings_and_the_owner_approves_them(base, tmp_path):
    secret = github_token("cli")
    files = {**learned(text="1"), "references/setup.md": f"token = {secret}\n".encode()}
    skill = folder(tmp_path / "a", SLUG, files)
    refused = run_json(*base, "publish", skill, "-w", "acme", code=3)
    (finding,) = refused["details"]["findings"]
    assert (finding["path"], finding["ordinal"]) == ("references/setup.md", 1)
    assert secret not in json.dumps(refused)
    result = CliRunner().invoke(cli, [str(a) for a in (*base, "publish", skill, "-w", "acme")])
    assert "finding references/setup.md:1" in result.output
    published = run_json(
        *base, "publish", skill, "-w", "acme", "--approve", "references/setup.md:1"
    )
    assert published["version"] == 1
    run(*base, "publish", skill, "-w", "acme", "--approve", "nonsense", code=2)


def test_a_load_is_recorded_and_listed(base, tmp_path):
    run_json(*base, "publish", folder(tmp_path / "a", SLUG, learned()), "-w", "acme")
    load = run_json(*base, "load", f"acme/{SLUG}@1", "--conversation", "c-1")
    assert (load["version"], load["created"]) == (1, True)
    assert not run_json(*base, "load", f"acme/{SLUG}@1", "--conversation", "c-1")["created"]
    run(*base, "load", f"acme/{SLUG}", "--conversation", "c-1", code=2)
    run_json(*base, "load", f"acme/{SLUG}@9", "--conversation", "c-1", code=5)
    listed = run_json(*base, "loads", "-w", "acme", "c-1")["items"]
    assert [(i["slug"], i["version"]) for i in listed] == [(SLUG, 1)]
