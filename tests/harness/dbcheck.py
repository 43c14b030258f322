"""`make db-check`: migrate fresh PostgreSQL and SQLite databases to head, then `alembic check`.

`alembic check` fails if the models (registry/db/tables.py) describe anything the migration
history does not create, so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from tests.harness.postgres import ensure_server

ROOT = Path(__file__).resolve().parents[2]


def _alembic(url: str, *args: str) -> None:
    command = [sys.executable, "-m", "alembic", "-c", str(ROOT / "alembic.ini"), *args]
    print(f"$ alembic {' '.join(args)}   ({url.rsplit('@', maxsplit=1)[-1]})", flush=True)  # noqa: T201
    env = {**os.environ, "SKILLREG_DATABASE_URL": url}
    subprocess.run(command, check=True, cwd=ROOT, env=env)


def _check(url: str) -> None:
    _alembic(url, "upgrade", "head")
    _alembic(url, "check")
    # The history must also run backwards and forwards again cleanly.
    _alembic(url, "downgrade", "base")
    _alembic(url, "upgrade", "head")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        _check(f"sqlite+aiosqlite:///{tmp}/dbcheck.db")
    server = ensure_server()
    name = f"skillreg_dbcheck_{uuid.uuid4().hex[:8]}"
    server.create_database(name)
    try:
        _check(server.url(name))
    finally:
        server.drop_database(name)
    print("db-check: models and migrations agree on SQLite and PostgreSQL")  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
