"""`skillreg init` on PostgreSQL: a missing database is created, or the message says how.

A role that may create databases gets its database created by `init` (and a second `init`
creates nothing). A role that may not gets one line naming the `createdb` command to run,
and nothing is created.
"""

from __future__ import annotations

import uuid

import pytest

from tests.harness.postgres import Server, admin_sql, can_admin
from tests.support.cli import run, run_json

pytestmark = pytest.mark.postgres


def _exists(server: Server, name: str) -> bool:
    with server.connect() as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
        return found.fetchone() is not None


def test_init_creates_a_missing_database_when_the_role_may(pg_server, tmp_path):
    name = f"skillreg_init_{uuid.uuid4().hex[:10]}"
    url = pg_server.url(name)
    blobs = ["--blob-url", (tmp_path / "blobs").as_uri()]
    assert not _exists(pg_server, name)
    try:
        out = run("--database-url", url, *blobs, "init")
        assert out.startswith("created the database;")
        assert _exists(pg_server, name)
        again = run_json("--database-url", url, *blobs, "init")
        assert again["created_database"] is False
        assert again["revision"]
        listed = run_json("--database-url", url, *blobs, "list", "-w", "acme", code=5)
        assert listed["error"] == "workspace_not_found"
    finally:
        pg_server.drop_database(name)


def test_init_names_the_createdb_command_when_the_role_may_not(pg_server, tmp_path):
    if not can_admin(pg_server):
        pytest.skip("making a role without CREATEDB needs the local cluster's superuser (root)")
    role = f"skillreg_nocreatedb_{uuid.uuid4().hex[:8]}"
    name = f"skillreg_init_{uuid.uuid4().hex[:10]}"
    made = admin_sql(f"CREATE ROLE {role} LOGIN NOCREATEDB PASSWORD 'secret'")
    assert made.returncode == 0, made.stderr
    try:
        url = f"postgresql+psycopg://{role}:secret@{pg_server.host}:{pg_server.port}/{name}"
        out = run("--database-url", url, "--blob-url", (tmp_path / "b").as_uri(), "init", code=6)
        assert len(out.strip().splitlines()) == 1, out
        assert f'database "{name}" does not exist and role "{role}" may not create' in out
        server = f"-h {pg_server.host} -p {pg_server.port}"
        assert f"createdb {server} -U postgres -O {role} {name}" in out
        assert "secret" not in out
        assert not _exists(pg_server, name)
    finally:
        admin_sql(f"DROP ROLE IF EXISTS {role}")
