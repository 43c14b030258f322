"""Start (or find) the PostgreSQL server the tests use.

Order: `SKILLREG_TEST_POSTGRES_URL` if set (a role that may CREATE DATABASE); else the
test role on 127.0.0.1:5432 if it answers; else, as root on a Debian-style machine, start
the installed cluster with `pg_ctlcluster` and create the test role with `runuser`.
The cluster keeps its configured `fsync`, so durability tests mean something.
The suite's workers (`pytest -n`) each call `ensure_server`; starting the cluster is
serialized by a file lock, so only the first one starts it.
"""

from __future__ import annotations

import fcntl
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

import psycopg
from psycopg import sql

TEST_ROLE = "skillreg_test"
TEST_PASSWORD = "skillreg_test"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5432


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server could be found or started."""


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    user: str
    password: str
    maintenance_db: str = "postgres"

    def url(self, dbname: str, driver: str = "postgresql+psycopg") -> str:
        return (
            f"{driver}://{quote(self.user)}:{quote(self.password)}"
            f"@{self.host}:{self.port}/{quote(dbname)}"
        )

    def connect(self, dbname: str | None = None) -> psycopg.Connection:
        return psycopg.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            dbname=dbname or self.maintenance_db,
            autocommit=True,
            connect_timeout=5,
        )

    def create_database(self, dbname: str, *, template: str | None = None) -> None:
        """CREATE DATABASE `dbname` (a clone of `template` if given)."""
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname))
        if template is not None:
            statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
        with self.connect() as conn:
            conn.execute(statement)

    def drop_database(self, dbname: str) -> None:
        """DROP DATABASE `dbname` if it exists, ending its connections."""
        with self.connect() as conn:
            _drop(conn, dbname)


def _from_env(url: str) -> Server:
    parts = urlsplit(url.replace("postgresql+psycopg://", "postgresql://"))
    return Server(
        host=parts.hostname or DEFAULT_HOST,
        port=parts.port or DEFAULT_PORT,
        user=parts.username or TEST_ROLE,
        password=parts.password or "",
        maintenance_db=(parts.path or "/postgres").lstrip("/") or "postgres",
    )


def _answers(server: Server) -> bool:
    try:
        with server.connect() as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError:
        return False
    return True


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=False, capture_output=True, text=True, timeout=120)


def _start_debian_cluster() -> None:
    if os.geteuid() != 0 or shutil.which("pg_lsclusters") is None:
        raise PostgresUnavailable(
            "no server answers and this is not root on a machine with pg_ctlcluster; "
            "set SKILLREG_TEST_POSTGRES_URL"
        )
    listing = _run("pg_lsclusters", "--no-header")
    clusters = [line.split() for line in listing.stdout.splitlines() if line.strip()]
    if not clusters:
        raise PostgresUnavailable("pg_lsclusters lists no cluster")
    version, name, port = clusters[0][0], clusters[0][1], int(clusters[0][2])
    if port != DEFAULT_PORT:
        raise PostgresUnavailable(f"cluster {version}/{name} listens on {port}, expected 5432")
    if "online" not in clusters[0][3]:
        started = _run("pg_ctlcluster", "--skip-systemctl-redirect", version, name, "start")
        if started.returncode != 0:
            raise PostgresUnavailable(f"pg_ctlcluster start failed: {started.stderr.strip()}")
    deadline = time.monotonic() + 60
    while _run("pg_isready", "-h", DEFAULT_HOST, "-p", str(port)).returncode != 0:
        if time.monotonic() > deadline:
            raise PostgresUnavailable("the cluster did not accept connections within 60 s")
        time.sleep(0.2)  # polling a starting server, not a test waiting on a race
    create_role = (
        "DO $$ BEGIN "
        f"IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{TEST_ROLE}') THEN "
        f"CREATE ROLE {TEST_ROLE} LOGIN CREATEDB PASSWORD '{TEST_PASSWORD}'; "
        f"ELSE ALTER ROLE {TEST_ROLE} LOGIN CREATEDB PASSWORD '{TEST_PASSWORD}'; "
        "END IF; END $$;"
    )
    made = admin_sql(create_role)
    if made.returncode != 0:
        raise PostgresUnavailable(f"creating the test role failed: {made.stderr.strip()}")


def can_admin(server: Server) -> bool:
    """True if `admin_sql` reaches `server`: the local Debian cluster, run as root."""
    local = (server.host, server.port) == (DEFAULT_HOST, DEFAULT_PORT)
    return local and os.geteuid() == 0 and shutil.which("runuser") is not None


def admin_sql(sql: str) -> subprocess.CompletedProcess[str]:
    """Run `sql` as the cluster's superuser (`postgres`) through its local socket."""
    return _run("runuser", "-u", "postgres", "--", "psql", "-v", "ON_ERROR_STOP=1", "-c", sql)


def ensure_server() -> Server:
    """Return a reachable server whose role may create databases, starting one if needed."""
    env_url = os.environ.get("SKILLREG_TEST_POSTGRES_URL")
    if env_url:
        server = _from_env(env_url)
        if not _answers(server):
            raise PostgresUnavailable(f"SKILLREG_TEST_POSTGRES_URL does not answer: {env_url}")
        return server
    server = Server(DEFAULT_HOST, DEFAULT_PORT, TEST_ROLE, TEST_PASSWORD)
    if _answers(server):
        return server
    # Another worker may be starting the cluster: wait for it, then look again.
    with (Path(tempfile.gettempdir()) / "skillreg-test-postgres.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _answers(server):
            _start_debian_cluster()
    if not _answers(server):
        raise PostgresUnavailable("the server started but the test role cannot connect")
    return server


class ClonePool:
    """Databases cloned from a template ahead of the tests that take them.

    Cloning costs ~80 ms of WAL writing and fsync on this kind of machine, on the order of
    a short test; a thread of its own clones the next test's database while the current
    test runs. Every database is a fresh clone, used by one test.

    Dropping is another thread's work, done in batches: PostgreSQL 15 forces a checkpoint
    on every DROP DATABASE (3-5 s on a busy machine, against ~0.15 s for a clone), so a
    drop in the cloning thread made the next test wait for it, and a checkpoint per test
    wrote the cluster's dirty pages once per test. Dropped `batch` at a time, the first
    checkpoint of a batch does the writing and the others find little to do.
    """

    def __init__(self, server: Server, template: str, *, ahead: int = 2, batch: int = 8) -> None:
        self._server = server
        self._template = template
        self._batch = batch
        self._jobs: queue.Queue[str | None] = queue.Queue()
        self._ready: queue.Queue[str | BaseException] = queue.Queue()
        self._drops: queue.Queue[str | None] = queue.Queue()
        self._made: set[str] = set()
        self._lock = threading.Lock()
        self._cloner = threading.Thread(target=self._clone, name="pg-clones", daemon=True)
        self._dropper = threading.Thread(target=self._drop_batches, name="pg-drops", daemon=True)
        self._cloner.start()
        self._dropper.start()
        for _ in range(ahead):
            self._create()

    def _create(self) -> None:
        self._jobs.put(f"skillreg_t_{uuid.uuid4().hex[:12]}")

    def take(self) -> str:
        """A fresh clone of the template, for one test; the next one starts cloning now."""
        self._create()
        found = self._ready.get(timeout=300)
        if isinstance(found, BaseException):
            raise found
        return found

    def give_back(self, name: str) -> None:
        """Drop `name` (its connections are ended) in the background."""
        self._drops.put(name)

    def close(self) -> None:
        """Finish the queued work, then drop every clone still there (taken or not)."""
        self._jobs.put(None)
        self._drops.put(None)
        self._cloner.join(timeout=300)
        self._dropper.join(timeout=300)
        with self._server.connect() as conn:
            for name in sorted(self._made):
                _drop(conn, name)

    def _clone(self) -> None:
        with self._server.connect() as conn:
            while (name := self._jobs.get()) is not None:
                try:
                    conn.execute(
                        sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                            sql.Identifier(name), sql.Identifier(self._template)
                        )
                    )
                except psycopg.Error as exc:
                    self._ready.put(exc)
                else:
                    with self._lock:
                        self._made.add(name)
                    self._ready.put(name)

    def _drop_batches(self) -> None:
        with self._server.connect() as conn:
            pending: list[str] = []
            while True:
                name = self._drops.get()
                if name is not None:
                    pending.append(name)
                if len(pending) >= self._batch or (name is None and pending):
                    for dropped in pending:
                        if _drop(conn, dropped):
                            with self._lock:
                                self._made.discard(dropped)
                    pending.clear()
                if name is None:
                    return


def _drop(conn: psycopg.Connection, name: str, attempts: int = 5) -> bool:
    """Drop `name`, ending its connections; a client reconnecting at that moment (a test's
    subprocess on its way out) makes it try again. False if it is still there."""
    for attempt in range(attempts):
        try:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
        except psycopg.Error:
            time.sleep(0.1 * (attempt + 1))
        else:
            return True
    return False
