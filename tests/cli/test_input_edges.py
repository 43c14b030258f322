"""Bad input at the command line: a typed error with the documented exit code, never a traceback.

Each case was found by a review of the CLI: a folder that could not be read fully, numbers
Python reads but no column holds, paths that are missing, usage errors printed as text
under `--json`. Every refusal names the path or parameter and the rule, exits with its
code (2 usage, 3 refused) and stores nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import Result

from tests.support.cli import Invoke, initialised, settings_env
from tests.support.nesting import nest, unnest

SKILL_MD = "---\nname: {name}\ndescription: A test skill.\n---\n# {name}\n"


@pytest.fixture
def run(tmp_path: Path) -> Invoke:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'registry.db'}"
    return initialised(settings_env(database_url, tmp_path / "blobs"))


def skill(root: Path, name: str = "demo") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL_MD.format(name=name))
    return folder


def refused(result: Result, code: int) -> dict[str, object]:
    """The `--json` error body of a command that exited with `code`, and no traceback."""
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    body = json.loads(result.output)
    assert body["exit_code"] == code
    return body


def nothing_stored(run: Invoke) -> None:
    assert json.loads(run("list", "acme", "--json").output)["items"] == []


# ---------------------------------------------------------------- folders


def test_publish_refuses_a_folder_it_cannot_list(run, tmp_path, monkeypatch):
    folder = skill(tmp_path)
    (folder / "scripts").mkdir()
    (folder / "scripts" / "run.py").write_text("print(1)\n")
    # As root `chmod 000` stops nothing: listing that folder fails as it would without root.
    denied = (folder / "scripts").stat().st_ino
    real_scandir, real_open = os.scandir, os.open

    def is_denied(target: object, dir_fd: int | None = None) -> bool:
        try:
            return os.stat(target, dir_fd=dir_fd).st_ino == denied  # type: ignore[call-overload]
        except (OSError, TypeError, ValueError):
            return False

    def scandir(target="."):  # type: ignore[no-untyped-def]
        if is_denied(target):
            raise PermissionError(13, "Permission denied")
        return real_scandir(target)

    def open_(name, flags, mode=0o777, *, dir_fd=None):  # type: ignore[no-untyped-def]
        if is_denied(name, dir_fd):
            raise PermissionError(13, "Permission denied")
        return real_open(name, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "open", open_)
    body = refused(run("publish", folder, "-w", "acme", "--json"), 3)
    assert body["details"] == {
        "path": "scripts",
        "rule": "unreadable",
        "detail": "Permission denied",
    }
    monkeypatch.undo()
    nothing_stored(run)


@pytest.fixture
def nested():
    """`nest`, undone when the test ends (tests/support/nesting.py says why)."""
    made: list[tuple[Path, str]] = []

    def make(root: Path, name: str, levels: int) -> None:
        made.append((root, name))
        nest(root, name, levels)

    yield make
    for root, name in made:
        unnest(root, name)


def test_publish_refuses_1500_nested_folders_as_too_deep(run, tmp_path, nested):
    folder = skill(tmp_path)
    nested(folder, "d", 1500)
    body = refused(run("publish", folder, "-w", "acme", "--json"), 3)
    assert body["details"]["rule"] == "too_deep"
    assert body["details"]["path"] == "/".join(["d"] * 9)
    nothing_stored(run)


def test_publish_refuses_an_ignore_file_that_is_not_utf8(run, tmp_path):
    folder = skill(tmp_path)
    (folder / ".skillregignore").write_bytes(b"\xff*.tmp\n")
    body = refused(run("publish", folder, "-w", "acme", "--json"), 3)
    assert body["details"]["path"] == ".skillregignore"
    assert body["details"]["rule"] == "not_utf8"
    nothing_stored(run)


def test_publish_refuses_a_file_over_the_configured_size_before_reading_it(tmp_path):
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'registry.db'}"
    run = initialised(settings_env(database_url, tmp_path / "blobs", max_file_bytes=1000))
    folder = skill(tmp_path)
    with (folder / "huge.bin").open("wb") as huge:
        huge.truncate(3 * 1024**3)  # sparse
    body = refused(run("publish", folder, "-w", "acme", "--json"), 3)
    assert body["details"] == {
        "rule": "max_file_bytes",
        "limit": 1000,
        "actual": 3 * 1024**3,
        "path": "huge.bin",
    }
    nothing_stored(run)


# ---------------------------------------------------------------- get --out


@pytest.fixture
def published(run, tmp_path) -> Invoke:
    assert run("publish", skill(tmp_path / "src"), "-w", "acme").exit_code == 0
    return run


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        ("file", "is a file"),
        ("under_a_file", "is a file"),
        ("name_too_long", "File name too long"),
    ],
)
def test_get_out_that_cannot_be_a_folder_is_a_usage_error(published, tmp_path, make, expected):
    afile = tmp_path / "afile"
    afile.write_bytes(b"mine\n")
    out = {
        "file": afile,
        "under_a_file": afile / "sub",
        "name_too_long": tmp_path / ("n" * 300),
    }[make]
    result = published("get", "acme/demo", "--out", out)
    assert result.exit_code == 2, result.output
    assert expected in result.output
    assert afile.read_bytes() == b"mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "blobs", "registry.db", "src"]


def test_get_out_into_a_folder_that_is_not_empty_is_refused(published, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_bytes(b"mine\n")
    body = refused(published("get", "acme/demo", "--out", out, "--json"), 3)
    assert body["details"]["rule"] == "not_empty"
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
