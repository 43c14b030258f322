"""Bad input at the command line: a typed error with the documented exit code, never a traceback.

Each case was found by a review of the CLI: a folder that could not be read fully, numbers
Python reads but no column holds, paths that are missing, usage errors printed as text
under `--json`. Every refusal names the path or parameter and the rule, exits with its
code (2 usage, 3 refused) and stores nothing: the database and the blob folder are what
they were before the command.

The module's tests share one initialised registry (`cli`): each table of bad inputs runs
in one test, against that registry, and names the failing case in its message. What the
tests write (a control run that succeeds, a published skill to fetch) never decides what
another test sees: a refusal is checked against the state just before it.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from registry.cli.main import cli as skillreg_cli
from tests.support.cli import Invoke, initialised, settings_env
from tests.support.cli import run as skillreg

SKILL_MD = "---\nname: {name}\ndescription: A test skill.\n---\n# {name}\n"


@dataclass(frozen=True)
class Cli:
    """One initialised registry (SQLite and a blob folder under `root`) and its invoker."""

    root: Path
    env: dict[str, str]
    run: Invoke

    def run_with(self, *args: object, **settings: object) -> Result:
        """`skillreg ARGS` on this registry with extra settings (`max_file_bytes=1000`)."""
        env = {**self.env, **{f"SKILLREG_{k.upper()}": str(v) for k, v in settings.items()}}
        return CliRunner().invoke(skillreg_cli, [str(a) for a in args], env=env)

    def stored(self) -> tuple[list[str], list[str]]:
        """Every row of the database and every file of the blob folder."""
        with closing(sqlite3.connect(self.root / "registry.db")) as db:
            rows = list(db.iterdump())
        blobs = self.root / "blobs"
        files = sorted(p.relative_to(blobs).as_posix() for p in blobs.rglob("*") if p.is_file())
        return rows, files

    @contextmanager
    def nothing_stored(self) -> Iterator[None]:
        """The registry must be as it was once the refusals inside are done."""
        before = self.stored()
        yield
        assert self.stored() == before


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    root = tmp_path_factory.mktemp("cli-registry")
    env = settings_env(f"sqlite+aiosqlite:///{root / 'registry.db'}", root / "blobs")
    return Cli(root, env, initialised(env))


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


# ---------------------------------------------------------------- folders


def test_publish_refuses_a_folder_it_cannot_list(cli, tmp_path, monkeypatch):
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
    with cli.nothing_stored():
        body = refused(cli.run("publish", folder, "-w", "acme", "--json"), 3)
    assert body["details"] == {
        "path": "scripts",
        "rule": "unreadable",
        "detail": "Permission denied",
    }


def test_publish_refuses_1500_nested_folders_as_too_deep(cli, tmp_path, nested):
    folder = skill(tmp_path)
    nested(folder, "d", 1500)
    with cli.nothing_stored():
        body = refused(cli.run("publish", folder, "-w", "acme", "--json"), 3)
    assert body["details"]["rule"] == "too_deep"
    assert body["details"]["path"] == "/".join(["d"] * 9)


def test_publish_refuses_an_ignore_file_that_is_not_utf8(cli, tmp_path):
    folder = skill(tmp_path)
    (folder / ".skillregignore").write_bytes(b"\xff*.tmp\n")
    with cli.nothing_stored():
        body = refused(cli.run("publish", folder, "-w", "acme", "--json"), 3)
    assert body["details"]["path"] == ".skillregignore"
    assert body["details"]["rule"] == "not_utf8"


def test_publish_refuses_a_file_over_the_configured_size_before_reading_it(cli, tmp_path):
    folder = skill(tmp_path)
    with (folder / "huge.bin").open("wb") as huge:
        huge.truncate(3 * 1024**3)  # sparse
    with cli.nothing_stored():
        result = cli.run_with("publish", folder, "-w", "acme", "--json", max_file_bytes=1000)
        body = refused(result, 3)
    assert body["details"] == {
        "rule": "max_file_bytes",
        "limit": 1000,
        "actual": 3 * 1024**3,
        "path": "huge.bin",
    }


# ---------------------------------------------------------------- get --out


def test_get_out_that_cannot_be_a_folder_or_is_not_empty_is_refused(cli, tmp_path):
    assert cli.run("publish", skill(tmp_path / "src", "fetched"), "-w", "acme").exit_code == 0
    work = tmp_path / "work"
    work.mkdir()
    afile = work / "afile"
    afile.write_bytes(b"mine\n")
    cases = {
        "file": (afile, "is a file"),
        "under_a_file": (afile / "sub", "is a file"),
        "name_too_long": (work / ("n" * 300), "File name too long"),
    }
    for case, (out, expected) in cases.items():
        result = cli.run("get", "acme/fetched", "--out", out)
        assert result.exit_code == 2, (case, result.output)
        assert expected in result.output, case
        assert afile.read_bytes() == b"mine\n", case
        assert sorted(p.name for p in work.iterdir()) == ["afile"], case

    out = work / "out"
    out.mkdir()
    (out / "keep.txt").write_bytes(b"mine\n")
    body = refused(cli.run("get", "acme/fetched", "--out", out, "--json"), 3)
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


def test_a_number_that_is_not_plain_decimal_in_range_is_a_usage_error(cli, tmp_path):
    folder = skill(tmp_path)
    for command, template in NUMBERS.items():
        control = cli.run(*_args(template, "1", tmp_path, folder))
        # The command line itself is well formed.
        assert control.exit_code != 2, (command, control.output)
        before = cli.stored()
        for name, value in NOT_NUMBERS.items():
            case = f"{command} {name}"
            result = cli.run(*_args(template, value, tmp_path, folder))
            assert result.exit_code == 2, (case, result.output)
            assert "Traceback" not in result.output, case
            assert "rror" in result.output, case
            assert cli.stored() == before, case


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


def test_the_largest_numbers_are_read_and_one_more_is_a_usage_error(cli, tmp_path):
    """Versions stop at 2**31 - 1 (MAX_VERSION), ids at 2**63 - 1 (MAX_ID)."""
    folder = skill(tmp_path)
    exact = [n for n in NUMBERS if "--limit" not in n and "--before" not in n]
    assert set(exact) >= IDS
    for name in exact:
        largest = 2**63 - 1 if name in IDS else 2**31 - 1
        result = cli.run(*_args(NUMBERS[name], str(largest), tmp_path, folder))
        assert result.exit_code not in (1, 2), (name, result.output)
        before = cli.stored()
        result = cli.run(*_args(NUMBERS[name], str(largest + 1), tmp_path, folder))
        assert result.exit_code == 2, (name, result.output)
        assert cli.stored() == before, name


# ---------------------------------------------------------------- missing paths


def test_a_folder_argument_that_is_missing_or_a_file_is_a_usage_error(cli, tmp_path):
    """As for every folder a command reads (tests/cli/test_paths_cli.py)."""
    commands = {
        "target forget": ["target", "forget", "{path}"],
        "decisions decide --alternative": [
            "decisions",
            "decide",
            "-w",
            "acme",
            "--alternative",
            "1={path}",
        ],
    }
    missing = tmp_path / "missing"
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    with cli.nothing_stored():
        for command, template in commands.items():
            for path, says in ((missing, "does not exist"), (afile, "is a file")):
                result = cli.run(*[a.format(path=path) for a in template])
                assert result.exit_code == 2, (command, path.name, result.output)
                assert says in result.output, (command, path.name)


# ---------------------------------------------------------------- --json usage errors

USAGE_ERRORS = {
    "in the command": (["show", "not-a-ref"], None, "expected WORKSPACE/SLUG"),
    "a bad value": (["list", "-w", "acme", "--limit", "0"], "limit", "not in the range"),
    "missing": (["publish", "{folder}"], "workspace", "Missing option"),
    "unknown option": (["list", "-w", "acme", "--bogus"], None, "No such option"),
    "subgroup": (["target", "forget", "{tmp}/missing"], "directory", "does not exist"),
    "group": (["--no-such-global", "list", "-w", "acme"], None, "No such option"),
}


def test_a_usage_error_under_json_is_the_json_error_body(cli, tmp_path):
    folder = skill(tmp_path)
    before = cli.stored()
    for case, (args, parameter, says) in USAGE_ERRORS.items():
        argv = [a.format(folder=folder, tmp=tmp_path) for a in args]
        body = refused(cli.run(*argv, "--json"), 2)
        assert body["error"] == "usage_error", case
        assert says in body["message"], case
        if parameter is not None:
            assert body["details"] == {"parameter": parameter}, case
        plain = cli.run(*argv)  # without --json: click's usage text, as before
        assert plain.exit_code == 2, case
        assert plain.output.startswith("Usage:") or "Error:" in plain.output, case
        with pytest.raises(json.JSONDecodeError):
            json.loads(plain.output)
        assert cli.stored() == before, case


# ---------------------------------------------------------------- sources


def test_a_blank_source_is_a_usage_error(cli, tmp_path):
    folder = skill(tmp_path)
    before = cli.stored()
    for case, source in {"empty": "", "spaces": "   ", "tab": "\t"}.items():
        result = cli.run("publish", folder, "-w", "acme", "--source", "chat:1", "--source", source)
        assert result.exit_code == 2, (case, result.output)
        assert "--source" in result.output, case
        result = cli.run("exclude-source", "-w", "acme", source)
        assert result.exit_code == 2, (case, result.output)
        assert cli.stored() == before, case


def test_every_command_that_reads_a_folder_reads_it_within_the_configured_limits(cli, tmp_path):
    """A file above the default 2 MiB is read where the configured limit allows it."""
    big = 3 * 1024 * 1024
    folder, other = skill(tmp_path, "big"), skill(tmp_path, "big2")
    for each in (folder, other):
        (each / "data.bin").write_bytes(b"\x00" * big)
    for command in (
        ["publish", folder, "-w", "acme"],
        ["catalog", "publish", folder, "--listing", "big"],
        ["catalog", "import", other, "--listing", "big2"],
    ):
        result = cli.run_with(*command, "--json", max_file_bytes=4 * big)
        assert result.exit_code == 0, (command[:2], result.output)


def test_a_database_url_refused_never_shows_its_password():
    for url in (
        "postgresql+asyncpg://user:hunter2@db.example/registry",  # another driver
        "mysql://user:hunter2@db.example/registry",  # another database
        "pg ://user:hunter2@db.example/registry",  # unparsable
        "://user:hunter2@db.example/registry",  # no scheme
    ):
        output = skillreg("--database-url", url, "init", code=6)  # a configuration problem
        assert "unsupported database URL" in output, url
        assert "hunter2" not in output, url
