"""`skillreg gc`, `gc stats` and `fsck`, end to end through the command line."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from registry import Registry, Scope
from registry.cli.gc import parse_duration
from registry.cli.main import cli
from registry.domain.model import PackageFile
from tests.support.cli import database_options, run, run_json
from tests.support.faults import ScriptedFailpoints
from tests.support.packages import package


def write_folder(root: Path, files) -> Path:
    for path, value in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        data = value.data if isinstance(value, PackageFile) else value
        target.write_bytes(data)
        if isinstance(value, PackageFile) and value.executable:
            target.chmod(0o755)
    return root


@pytest.fixture
def embedded(embedded: Path) -> Path:
    """The embedded default (`./.skillreg/` under a fresh working directory), initialised."""
    run("init")
    return embedded


def test_must_show_an_interrupted_publish_is_listed_reclaimed_and_fsck_is_clean(embedded):
    first = write_folder(embedded / "v1" / "pdf-report", package("pdf-report", tag="one"))
    run("publish", str(first), "--workspace", "acme", "--expect-head", "new")

    # A publish interrupted after its uploads (as Ctrl-C would): nothing is published,
    # its claims are released, and its blobs are left behind.
    async def interrupted() -> None:
        failpoints = ScriptedFailpoints()
        failpoints.cancel("write.uploaded")
        async with Registry.open(failpoints=failpoints) as reg:
            with pytest.raises(asyncio.CancelledError):
                await reg.write_package(
                    Scope("acme"),
                    "pdf-report",
                    package("pdf-report", tag="two"),
                    expected_head=1,
                    actor="cli",
                )

    asyncio.run(interrupted())

    listed = run_json("fsck")
    assert listed["clean"]
    orphans = {o["digest"] for o in listed["orphans"]}
    assert listed["orphan_count"] == len(orphans) == 4
    assert all(o["status"] == "pending" and o["stored"] for o in listed["orphans"])
    human = run("fsck")
    for digest in orphans:
        assert digest in human

    reclaimed = run_json("gc", "--grace", "0s")
    assert reclaimed["blobs_reclaimed"] == 4
    assert reclaimed["figures"]["orphan_blobs"] == 0
    assert reclaimed["figures"]["last_gc_at"] is not None

    verified = run_json("fsck", "--verify-content")
    assert verified["clean"]
    assert verified["orphan_count"] == 0
    assert verified["problems"] == []
    run("get", "acme/pdf-report", "--out", str(embedded / "out"))
    for path, value in package("pdf-report", tag="one").items():
        data = value.data if isinstance(value, PackageFile) else value
        assert (embedded / "out" / path).read_bytes() == data


def test_fsck_exits_non_zero_and_names_the_blob_and_its_versions(database_url, tmp_path):
    urls = database_options(database_url, tmp_path / "blobs")
    folder = write_folder(tmp_path / "pdf-report", package("pdf-report"))
    run(*urls, "init")
    run(*urls, "publish", str(folder), "--workspace", "acme")
    info = run_json(*urls, "show", "acme/pdf-report")
    digest = next(f["digest"] for f in info["files"] if f["path"] == "SKILL.md")
    path = tmp_path / "blobs" / digest[:2] / digest[2:4] / digest
    path.chmod(0o644)
    path.write_bytes(b"X" + path.read_bytes()[1:])

    assert run_json(*urls, "fsck")["clean"]  # same size: only reading finds it
    report = run_json(*urls, "fsck", "--verify-content", code=1)
    assert not report["clean"]
    assert [(p["kind"], p["digest"], p["references"]) for p in report["problems"]] == [
        ("blob_corrupted", digest, ["acme/pdf-report@1"])
    ]
    text = run(*urls, "fsck", "--verify-content", code=1)
    assert "blob_corrupted" in text
    assert digest in text
    assert "acme/pdf-report@1" in text


def test_gc_dry_run_and_stats(database_url, tmp_path):
    urls = database_options(database_url, tmp_path / "blobs")
    run(*urls, "init")
    stats = run_json(*urls, "gc", "stats")
    assert (stats["gc_runs"], stats["last_gc_at"], stats["bytes_stored"]) == (0, None, 0)
    assert "last GC           never" in run(*urls, "gc", "stats")
    plan = run_json(*urls, "gc", "--dry-run", "--grace", "90m")
    assert (plan["dry_run"], plan["grace_seconds"], plan["run_id"]) == (True, 5400.0, None)
    assert "gc (dry run): would reclaim 0 blobs" in run(*urls, "gc", "--dry-run")
    done = run_json(*urls, "gc")
    assert done["grace_seconds"] == 3600.0
    assert run_json(*urls, "gc", "stats")["gc_runs"] == 1
    result = CliRunner().invoke(cli, [*urls, "gc", "--grace", "soon"])
    assert result.exit_code == 2
    assert "expected a duration" in result.output


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0s", 0),
        ("0", 0),
        ("90m", 5400),
        ("1h", 3600),
        ("1h30m", 5400),
        ("1.5h", 5400),
        ("2d", 172800),
        ("1w", 604800),
        ("250ms", 0.25),
        ("45", 45),
        (" 10S ", 10),
    ],
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "1x", "-1s", "1h 30m", "1.h", "s1"])
def test_bad_durations(text):
    with pytest.raises(click.BadParameter):
        parse_duration(text)
