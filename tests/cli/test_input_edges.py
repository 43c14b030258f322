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
from tests.support.cli import run as skillreg

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
    # Not even a deleted skill: the workspace was never made.
    body = json.loads(run("list", "-w", "acme", "--json").output)
    assert body["error"] == "workspace_not_found"


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


# ---------------------------------------------------------------- numbers

# Every place a command reads a number from text, "{n}" standing for it: versions (a
# 32-bit column, MAX_VERSION), ids and cursors (64-bit, MAX_ID), ordinals, page sizes.
NUMBERS = {
    "show REF@N": ["show", "acme/demo@{n}"],
    "get REF@N": ["get", "acme/demo@{n}", "--out", "{tmp}/out"],
    "load REF@N": ["load", "acme/demo@{n}", "--conversation", "c1"],
    "publish --expect-head": ["publish", "{folder}", "-w", "acme", "--expect-head", "{n}"],
    "publish --approve": ["publish", "{folder}", "-w", "acme", "--approve", "SKILL.md:{n}"],
    "list --limit": ["list", "-w", "acme", "--limit", "{n}"],
    "diff A": ["diff", "acme/demo", "{n}", "1"],
    "diff pN": ["diff", "acme/demo", "p{n}", "1"],
    "history --before": ["history", "acme/demo", "--before", "1.{n}"],
    "history --limit": ["history", "acme/demo", "--limit", "{n}"],
    "restore VERSION": ["restore", "acme/demo", "{n}", "--expect-head", "1"],
    "restore --expect-head": ["restore", "acme/demo", "1", "--expect-head", "{n}"],
    "proposals show": ["proposals", "show", "-w", "acme", "{n}"],
    "proposals decide": ["proposals", "decide", "-w", "acme", "{n}", "apply"],
    "proposals list --before": ["proposals", "list", "-w", "acme", "--before", "{n}"],
    "decisions decide --apply": ["decisions", "decide", "-w", "acme", "--apply", "{n}"],
    "decisions decide --keep": ["decisions", "decide", "-w", "acme", "--keep", "{n}"],
    "decisions decide --alternative": [
        "decisions",
        "decide",
        "-w",
        "acme",
        "--alternative",
        "{n}={folder}",
    ],
    "decisions list --before": ["decisions", "list", "-w", "acme", "--before", "{n}"],
    "pending drop": ["pending", "drop", "-w", "acme", "{n}"],
    "suppressions lift": ["suppressions", "lift", "-w", "acme", "{n}"],
    "catalog show LISTING@N": ["catalog", "show", "demo@{n}"],
    "catalog list --limit": ["catalog", "list", "--limit", "{n}"],
    "install LISTING@N": ["install", "demo@{n}", "-w", "acme"],
    "update --to": ["update", "acme/demo", "--to", "{n}"],
    "jobs show": ["jobs", "show", "{n}"],
    "jobs list --before": ["jobs", "list", "--before", "{n}"],
    "search --limit": ["search", "demo", "-w", "acme", "--limit", "{n}"],
}
NOT_NUMBERS = {
    "2**63": str(2**63),  # OverflowError in the database driver before
    "superscript two": "\u00b2",  # isdigit() but int() fails: ValueError before
    "arabic-indic one": "\u0661",  # read as 1 before
    "5000 digits": "9" * 5000,  # past int()'s 4300-digit limit
}


def _args(template: list[str], n: str, tmp_path: Path, folder: Path) -> list[str]:
    return [a.format(n=n, tmp=tmp_path, folder=folder) for a in template]


@pytest.mark.parametrize("value", NOT_NUMBERS.values(), ids=NOT_NUMBERS.keys())
@pytest.mark.parametrize("command", NUMBERS.values(), ids=NUMBERS.keys())
def test_a_number_that_is_not_plain_decimal_in_range_is_a_usage_error(
    run, tmp_path, command, value
):
    folder = skill(tmp_path)
    control = run(*_args(command, "1", tmp_path, folder))
    assert control.exit_code != 2, control.output  # the command line itself is well formed
    result = run(*_args(command, value, tmp_path, folder))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "rror" in result.output


# The commands whose number is an id (MAX_ID); the others' is a version (MAX_VERSION).
IDS = {
    "diff pN",
    "proposals show",
    "proposals decide",
    "decisions decide --apply",
    "decisions decide --keep",
    "decisions decide --alternative",
    "pending drop",
    "suppressions lift",
    "jobs show",
}


@pytest.mark.parametrize("name", [n for n in NUMBERS if "--limit" not in n and "--before" not in n])
def test_the_largest_numbers_are_read_and_one_more_is_a_usage_error(run, tmp_path, name):
    """Versions stop at 2**31 - 1 (MAX_VERSION), ids at 2**63 - 1 (MAX_ID)."""
    folder = skill(tmp_path)
    largest = 2**63 - 1 if name in IDS else 2**31 - 1
    result = run(*_args(NUMBERS[name], str(largest), tmp_path, folder))
    assert result.exit_code not in (1, 2), result.output
    result = run(*_args(NUMBERS[name], str(largest + 1), tmp_path, folder))
    assert result.exit_code == 2, result.output


# ---------------------------------------------------------------- missing paths


@pytest.mark.parametrize("kind", ["missing", "file"])
@pytest.mark.parametrize(
    "command",
    [
        ["target", "forget", "{path}"],
        ["decisions", "decide", "-w", "acme", "--alternative", "1={path}"],
    ],
    ids=["target forget", "decisions decide --alternative"],
)
def test_a_folder_argument_that_is_missing_or_a_file_is_a_usage_error(run, tmp_path, command, kind):
    """As for every folder a command reads (tests/cli/test_paths_cli.py)."""
    path = tmp_path / "package"
    if kind == "file":
        path.write_text("not a folder\n")
    result = run(*[a.format(path=path) for a in command])
    assert result.exit_code == 2, result.output
    assert ("does not exist" if kind == "missing" else "is a file") in result.output


# ---------------------------------------------------------------- --json usage errors


@pytest.mark.parametrize(
    ("args", "parameter", "says"),
    [
        (["show", "not-a-ref"], None, "expected WORKSPACE/SLUG"),  # raised in the command
        (["list", "-w", "acme", "--limit", "0"], "limit", "not in the range"),  # by click, parsing
        (["publish", "{folder}"], "workspace", "Missing option"),
        (["list", "-w", "acme", "--bogus"], None, "No such option"),
        (["target", "forget", "{tmp}/missing"], "directory", "does not exist"),  # a subgroup
        (["--no-such-global", "list", "-w", "acme"], None, "No such option"),  # the group's options
    ],
    ids=["in the command", "a bad value", "missing", "unknown option", "subgroup", "group"],
)
def test_a_usage_error_under_json_is_the_json_error_body(run, tmp_path, args, parameter, says):
    folder = skill(tmp_path)
    argv = [a.format(folder=folder, tmp=tmp_path) for a in args]
    result = run(*argv, "--json")
    body = refused(result, 2)
    assert body["error"] == "usage_error"
    assert says in body["message"]
    if parameter is not None:
        assert body["details"] == {"parameter": parameter}
    plain = run(*argv)  # without --json: click's usage text, as before
    assert plain.exit_code == 2
    assert plain.output.startswith("Usage:") or "Error:" in plain.output
    with pytest.raises(json.JSONDecodeError):
        json.loads(plain.output)


# ---------------------------------------------------------------- sources


@pytest.mark.parametrize("source", ["", "   ", "\t"], ids=["empty", "spaces", "tab"])
def test_a_blank_source_is_a_usage_error(run, tmp_path, source):
    folder = skill(tmp_path)
    result = run("publish", folder, "-w", "acme", "--source", "chat:1", "--source", source)
    assert result.exit_code == 2, result.output
    assert "--source" in result.output
    nothing_stored(run)
    result = run("exclude-source", "-w", "acme", source)
    assert result.exit_code == 2, result.output


def test_every_command_that_reads_a_folder_reads_it_within_the_configured_limits(tmp_path):
    """A file above the default 2 MiB is read where the configured limit allows it."""
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'registry.db'}"
    big = 3 * 1024 * 1024
    run = initialised(settings_env(database_url, tmp_path / "blobs", max_file_bytes=4 * big))
    folder, other = skill(tmp_path), skill(tmp_path, "demo2")
    for each in (folder, other):
        (each / "data.bin").write_bytes(b"\x00" * big)
    for command in (
        ["publish", folder, "-w", "acme"],
        ["catalog", "publish", folder, "--listing", "demo"],
        ["catalog", "import", other, "--listing", "demo2"],
    ):
        result = run(*command, "--json")
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+asyncpg://user:hunter2@db.example/registry",
        "mysql://user:hunter2@db.example/registry",
        "pg ://user:hunter2@db.example/registry",
        "://user:hunter2@db.example/registry",
    ],
    ids=["another-driver", "another-database", "unparsable", "no-scheme"],
)
def test_a_database_url_refused_never_shows_its_password(url):
    output = skillreg("--database-url", url, "init", code=6)  # a configuration problem
    assert "unsupported database URL" in output
    assert "hunter2" not in output
