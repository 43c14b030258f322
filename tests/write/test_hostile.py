"""I9: every hostile package is refused with a typed error and stores nothing.

The corpus (tests/corpus/hostile.py) is replayed through the registry on both databases
and, for the cases a filesystem can hold, through `skillreg publish` (exit 3).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from registry import ANY
from registry.cli.main import cli
from registry.domain.model import PackageFile
from registry.settings import Settings
from tests.corpus.fakes import AWS_ACCESS_KEY_ID
from tests.corpus.hostile import CASES, CORPUS_LIMITS, VALID_FILES
from tests.support.cli import settings_env
from tests.support.scopes import ACME
from tests.support.state import WRITE_TABLES, db_state, live_claims, store_digests

ALL_TABLES = WRITE_TABLES


def corpus_settings() -> Settings:
    return Settings(**asdict(CORPUS_LIMITS))


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 40


async def test_every_hostile_package_is_refused_and_stores_nothing(make_registry, local_store):
    registry = await make_registry(settings=corpus_settings())
    # A valid skill already exists, so "unchanged" covers an update as well as a create.
    await registry.write_package(ACME, "corpus-skill", VALID_FILES, expected_head=None, actor="u")
    before = await db_state(registry, ALL_TABLES)
    blobs_before = await store_digests(local_store)
    mismatches = []
    for case in CASES:
        for expected in (None, ANY):
            try:
                await registry.write_package(
                    ACME, case.slug, case.files, expected_head=expected, actor="u"
                )
            except Exception as exc:
                if not case.matches(exc):
                    mismatches.append((case.id, repr(exc)))
            else:
                mismatches.append((case.id, "accepted"))
    assert mismatches == []
    assert await db_state(registry, ALL_TABLES) == before
    assert await store_digests(local_store) == blobs_before
    assert await live_claims(registry) == 0


def _on_disk(case) -> bool:
    """Cases whose paths a POSIX filesystem can hold as they are (no NUL, no absolute...)."""
    for raw in case.files:
        if "\x00" in raw or raw.startswith("/") or raw.endswith("/") or "//" in raw:
            return False
        parts = raw.split("/")
        if any(p in ("", ".", "..") for p in parts):
            return False
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError:
            return False
        if any(len(p.encode()) > 255 for p in parts):
            return False
    return True


def _materialize(root: Path, files) -> bool:
    root.mkdir(parents=True, exist_ok=True)  # an empty package is an empty folder
    for raw, value in files.items():
        path = root / raw
        data = value.data if isinstance(value, PackageFile) else value
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists():
                return False  # a case-fold or file/dir collision the filesystem merges
            path.write_bytes(data)
        except OSError:
            return False
        if isinstance(value, PackageFile) and value.executable:
            path.chmod(0o755)
    return True


DISK_CASES = [c for c in CASES if _on_disk(c)]


@pytest.fixture
def cli_env(sqlite_url, tmp_path):
    env = settings_env(sqlite_url, tmp_path / "cli-blobs", **asdict(CORPUS_LIMITS))
    runner = CliRunner()
    assert runner.invoke(cli, ["init"], env=env).exit_code == 0
    return runner, env


def test_cli_refuses_hostile_folders_with_exit_3(cli_env, tmp_path):
    runner, env = cli_env
    assert len(DISK_CASES) >= 30
    exercised = 0
    for case in DISK_CASES:
        folder = tmp_path / "cases" / case.id / case.slug
        if not _materialize(folder, case.files):
            continue
        exercised += 1
        result = runner.invoke(
            cli,
            ["publish", str(folder), "--workspace", "acme", "--slug", case.slug, "--json"],
            env=env,
        )
        assert result.exit_code == 3, (case.id, result.output)
        assert '"error"' in result.output
    assert exercised >= 25
    listing = runner.invoke(cli, ["list", "-w", "acme", "--json"], env=env)
    assert listing.exit_code == 5  # nothing was stored: not even the workspace
    assert '"workspace_not_found"' in listing.output


def test_a_secret_never_appears_in_output_logs_database_or_store(cli_env, tmp_path, caplog):
    runner, env = cli_env
    secret = AWS_ACCESS_KEY_ID
    folder = tmp_path / "leaky" / "corpus-skill"
    _materialize(
        folder, {**VALID_FILES, "scripts/deploy/config.py": f'KEY = "{secret}"\n'.encode()}
    )
    result = runner.invoke(cli, ["publish", str(folder), "--workspace", "acme", "--json"], env=env)
    assert result.exit_code == 3
    assert "content_blocked" in result.output
    assert secret not in result.output
    assert secret not in caplog.text
    database = Path(env["SKILLREG_DATABASE_URL"].split("///", 1)[1])
    for path in database.parent.glob(database.name + "*"):  # the db, its WAL and SHM
        assert secret.encode() not in path.read_bytes()
    blob_root = Path(env["SKILLREG_BLOB_URL"].removeprefix("file://"))
    for path in blob_root.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes()


async def test_registry_error_for_a_secret_carries_no_value(make_registry):
    registry = await make_registry()
    secret = AWS_ACCESS_KEY_ID
    files = {**VALID_FILES, "notes/keys.txt": f"id={secret}\n".encode()}
    with pytest.raises(Exception) as caught:
        await registry.write_package(ACME, "corpus-skill", files, expected_head=None, actor="u")
    assert caught.value.code == "content_blocked"
    assert secret not in str(caught.value)
    assert secret not in repr(caught.value.details())
    assert caught.value.path == "notes/keys.txt"
