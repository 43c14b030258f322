"""`skillreg search`, `reindex-search` and `discovery`, end to end through the command line."""

from __future__ import annotations

import shutil

from registry.cli.packages import example_root
from tests.support.cli import database_options, run, run_json


def test_search_the_example_skills(database_url, tmp_path):
    base = database_options(database_url, tmp_path / "blobs")
    run(*base, "init")
    for slug in ("pdf-report", "csv-cleaner", "release-notes"):
        shutil.copytree(example_root() / slug, tmp_path / slug)
        run(*base, "publish", tmp_path / slug, "-w", "acme")
    found = run_json(*base, "search", "csv", "-w", "acme")
    assert found["hits"][0]["slug"] == "csv-cleaner"
    assert found["terms"] == ["csv"]
    assert "csv-cleaner@1" in run(*base, "search", "csv", "-w", "acme")
    unknown = run_json(*base, "search", "csv", "-w", "globex", code=5)
    assert unknown["error"] == "workspace_not_found"
    assert "no skill of acme matches zzz" in run(*base, "search", "zzz", "-w", "acme")
    assert run_json(*base, "reindex-search", "-w", "acme") == {"workspace": "acme", "documents": 3}
    run(*base, "search", "csv", "-w", "acme", "--limit", "0", code=2)


def test_publish_show_and_unpublish(database_url, tmp_path):
    base = database_options(database_url, tmp_path / "blobs")
    run(*base, "init")
    for slug in ("pdf-report", "csv-cleaner"):
        shutil.copytree(example_root() / slug, tmp_path / slug)
        run(*base, "publish", tmp_path / slug, "-w", "acme")
    assert "publishes nothing" in run(*base, "discovery", "show", "-w", "acme")
    published = run_json(*base, "discovery", "publish", "pdf-report", "-w", "acme", "--public")
    assert (published["skills"], published["public"], published["revision"]) == (
        ["pdf-report"],
        True,
        1,
    )
    shown = run_json(*base, "discovery", "show", "-w", "acme")
    assert [(e["slug"], e["version"], e["type"]) for e in shown["index"]] == [
        ("pdf-report", 1, "archive")
    ]
    assert "pdf-report" in run(*base, "discovery", "show", "-w", "acme")
    everything = run_json(*base, "discovery", "publish", "-w", "acme", "--all", "--private")
    assert (everything["everything"], everything["public"]) == (True, False)
    assert len(run_json(*base, "discovery", "show", "-w", "acme")["index"]) == 2
    run(*base, "discovery", "publish", "nope", "-w", "acme", code=5)
    cleared = run_json(*base, "discovery", "unpublish", "-w", "acme", "--all")
    assert (cleared["everything"], cleared["skills"]) == (False, [])
    assert run_json(*base, "discovery", "show", "-w", "acme")["index"] == []
