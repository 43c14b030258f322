"""The marketplace commands end to end on the embedded default (SQLite, local blobs)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from registry.cli.packages import example_root
from tests.corpus.archives import CASES
from tests.support.cli import initialised, settings_env


@pytest.fixture
def run(tmp_path):
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'registry.db'}"
    return initialised(settings_env(database_url, tmp_path / "blobs"))


def _json(result):
    assert result.output, result
    return json.loads(result.output)


def _example_tar_gz(name: str, dest: Path) -> Path:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(example_root() / name, arcname=name)
    dest.write_bytes(buffer.getvalue())
    return dest


def test_import_install_edit_update_keeps_the_owners_edit(run, tmp_path):
    archive = _example_tar_gz("pdf-report", tmp_path / "pdf-report.tar.gz")
    imported = _json(run("catalog", "import", str(archive), "--listing", "pdf-report", "--json"))
    assert (imported["format"], imported["stripped"], imported["version"]) == (
        "tar.gz",
        "pdf-report",
        1,
    )

    installed = _json(run("install", "pdf-report", "--workspace", "acme", "--json"))
    assert installed["job"]["status"] == "succeeded"
    assert installed["job"]["result"]["outcome"] == "installed"

    # The owner edits the copy.
    copy = tmp_path / "copy"
    assert run("get", "acme/pdf-report", "--out", str(copy)).exit_code == 0
    guide = copy / "references" / "style-guide.md"
    guide.write_bytes(guide.read_bytes() + b"\nOwner's house rule: no orange.\n")
    edited = run("publish", str(copy), "-w", "acme", "--slug", "pdf-report", "--expect-head", "1")
    assert edited.exit_code == 0, edited.output

    # The publisher ships version 2 of the listing.
    upstream = tmp_path / "upstream"
    assert run("get", "catalog/pdf-report", "--out", str(upstream)).exit_code == 0
    template = upstream / "templates" / "report.html"
    template.write_bytes(template.read_bytes() + b"<!-- v2 footer -->\n")
    published = run("catalog", "publish", str(upstream), "--listing", "pdf-report", "--json")
    assert _json(published)["version"] == 2

    updated = _json(run("update", "acme/pdf-report", "--json"))
    result = updated["job"]["result"]
    assert result["outcome"] == "merged"
    assert result["kept"] == ["references/style-guide.md"]
    assert result["taken"] == ["templates/report.html"]

    final = tmp_path / "final"
    assert run("get", "acme/pdf-report", "--out", str(final)).exit_code == 0
    assert (final / "references" / "style-guide.md").read_bytes() == guide.read_bytes()
    assert (final / "templates" / "report.html").read_bytes() == template.read_bytes()
    shown = _json(run("show", "acme/pdf-report", "--json"))
    assert (shown["version"], shown["origin"]) == (3, "marketplace_update")

    # Every step is in the history: the copy's, and the listing's in the catalog.
    copy_history = _json(run("history", "acme/pdf-report", "--json"))["items"]
    assert [(v["number"], v["origin"]) for v in copy_history] == [
        (3, "marketplace_update"),
        (2, "edit"),
        (1, "marketplace_install"),
    ]
    assert "listing:pdf-report@2" in copy_history[0]["sources"]
    listing_history = _json(run("history", "catalog/pdf-report", "--json"))["items"]
    assert [(v["number"], v["origin"]) for v in listing_history] == [(2, "edit"), (1, "import")]
    assert "marketplace_update" in run("history", "acme/pdf-report").output


def test_a_conflicting_update_becomes_a_proposal_the_owner_applies(run, tmp_path):
    source = example_root() / "pdf-report"
    assert run("catalog", "publish", str(source), "--listing", "pdf-report").exit_code == 0
    assert run("install", "pdf-report", "-w", "acme").exit_code == 0
    copy = tmp_path / "copy"
    assert run("get", "acme/pdf-report", "--out", str(copy)).exit_code == 0
    template = copy / "templates" / "report.html"
    template.write_bytes(template.read_bytes() + b"<!-- the owner's footer -->\n")
    assert run("publish", str(copy), "-w", "acme", "--slug", "pdf-report").exit_code == 0
    upstream = tmp_path / "upstream"
    assert run("get", "catalog/pdf-report", "--out", str(upstream)).exit_code == 0
    theirs = upstream / "templates" / "report.html"
    theirs.write_bytes(theirs.read_bytes() + b"<!-- upstream's footer -->\n")
    assert run("catalog", "publish", str(upstream), "--listing", "pdf-report").exit_code == 0

    updated = run("update", "acme/pdf-report")
    assert updated.exit_code == 0, updated.output
    assert "proposal 1 awaits the owner" in updated.output
    assert "templates/report.html" in updated.output
    head = tmp_path / "head"
    assert run("get", "acme/pdf-report", "--out", str(head)).exit_code == 0
    assert (head / "templates" / "report.html").read_bytes() == template.read_bytes()

    listed = _json(run("proposals", "list", "-w", "acme", "--json"))["items"]
    assert [(p["id"], p["origin"]) for p in listed] == [(1, "marketplace_update")]
    assert run("proposals", "decide", "-w", "acme", "1", "apply").exit_code == 0
    history = _json(run("history", "acme/pdf-report", "--json"))["items"]
    assert [(v["number"], v["origin"]) for v in history] == [
        (3, "marketplace_update"),
        (2, "edit"),
        (1, "marketplace_install"),
    ]


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.id in ("zip-slip", "tar-symlink", "zip-bomb")],
    ids=lambda case: case.id,
)
def test_a_hostile_archive_exits_3_and_names_the_rule(run, tmp_path, case):
    archive = tmp_path / "hostile.bin"
    archive.write_bytes(case.build())
    result = run("catalog", "import", str(archive), "--listing", "corpus-listing", "--json")
    assert result.exit_code == 3
    body = _json(result)
    assert (body["error"], body["details"]["rule"]) == ("archive_rejected", case.rule)
    assert _json(run("catalog", "list", "--json"))["items"] == []


def test_install_onto_an_owner_saved_skill_exits_4_with_the_job(run, tmp_path):
    source = example_root() / "csv-cleaner"
    assert run("catalog", "publish", str(source), "--listing", "csv-cleaner").exit_code == 0
    assert run("publish", str(source), "-w", "acme").exit_code == 0
    result = run("install", "csv-cleaner", "-w", "acme", "--json")
    assert result.exit_code == 4
    body = _json(result)
    assert body["error"] == "ownership_conflict"
    assert (body["job"]["status"], body["job"]["attempts"]) == ("failed", 1)
    human = run("install", "csv-cleaner", "-w", "acme")
    assert human.exit_code == 4
    assert "failed after 1 attempts" in human.output


def test_queued_jobs_run_with_jobs_run_and_are_listed(run):
    source = example_root() / "release-notes"
    assert run("catalog", "publish", str(source), "--listing", "release-notes").exit_code == 0
    for workspace in ("one", "two"):
        queued = _json(run("install", "release-notes", "-w", workspace, "--queue-only", "--json"))
        assert queued["job"]["status"] == "queued"
    ran = _json(run("jobs", "run", "--drain", "--json"))
    assert ran["ran"] == 2
    assert [j["result"]["outcome"] for j in ran["jobs"]] == ["installed", "installed"]
    listed = _json(run("jobs", "list", "--json"))
    assert [j["status"] for j in listed["items"]] == ["succeeded", "succeeded"]
    assert _json(run("jobs", "list", "--workspace", "two", "--json"))["items"][0]["id"] == 2
    shown = _json(run("jobs", "show", "1", "--json"))
    assert shown["payload"]["workspace"] == "one"
    assert run("jobs", "run", "--once").exit_code == 0
    assert "installed" in run("jobs", "list").output
    assert run("jobs", "show", "99").exit_code == 5


def test_listing_refs_and_refusals(run):
    assert run("install", "nothing", "-w", "acme").exit_code == 5
    assert run("install", "x@0", "-w", "acme").exit_code == 2
    assert run("update", "acme/pdf-report@2").exit_code == 2
    source = example_root() / "pdf-report"
    assert run("catalog", "publish", str(source), "--listing", "pdf-report").exit_code == 0
    assert run("install", "pdf-report@2", "-w", "acme").exit_code == 5
    assert run("publish", str(source), "-w", "acme").exit_code == 0
    not_installed = run("update", "acme/pdf-report", "--json")
    assert not_installed.exit_code == 4
    assert _json(not_installed)["error"] == "not_installed"
    shown = _json(run("catalog", "show", "pdf-report@1", "--json"))
    assert shown["version"] == 1
    assert "pdf-report" in run("catalog", "list").output
