"""The services a scenario needs, started on demand and torn down at the end of the run.

PostgreSQL and S3 come from the test harness (`tests/harness/`): the installed cluster (or
`SKILLREG_TEST_POSTGRES_URL`) with a fresh, migrated database per backend, and moto's
threaded S3 server with a fresh bucket. SQLite databases and local blob stores live in the
run's scratch directory, on the same disk as everything else the run writes (so an fsync
costs what it costs there, for the registry and its references alike).
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

from sqlalchemy.ext.asyncio import AsyncEngine

from blobstore import BlobStore, open_blobstore
from registry.api import Registry
from registry.db.engine import create_engine
from registry.db.migrate import upgrade
from registry.failpoints import NO_FAILPOINTS, Failpoints
from registry.services.signing import Signer
from registry.settings import GiB, MiB, Settings
from tests.harness.postgres import Server, ensure_server
from tests.harness.s3 import CLEARED_AWS_VARIABLES, FAKE_AWS_ENVIRONMENT, REGION, raw_client

# The backends a scenario can name: the embedded default, production-like, and PostgreSQL
# with a local store (for the process-level concurrency runs, where one in-process moto
# server would be the bottleneck rather than the registry).
SQLITE_LOCAL: Final = "sqlite+local"
PG_S3: Final = "postgresql+s3"
PG_LOCAL: Final = "postgresql+local"


# Every version is signed (docs/trust.md): the registries of a run, and the writer
# processes it starts (they inherit the environment), sign with one key of the run.
os.environ.setdefault("SKILLREG_SIGNING_KEY", Signer.generate().pem().decode())


def bench_settings(**overrides: Any) -> Settings:
    """Settings for benchmarks: the package limits raised so that 100 files of 1 MiB fit."""
    values: dict[str, Any] = {
        "max_package_bytes": 128 * MiB,
        "workspace_quota_bytes": 1024 * GiB,
        "capacity_saved": 1_000_000,
        "lock_timeout": 30.0,
        "statement_timeout": 120.0,
    }
    values.update(overrides)
    return Settings(**values)


@dataclass
class Backend:
    """A registry on one database and one blob store, plus what the references reuse."""

    name: str
    registry: Registry
    engine: AsyncEngine
    store: BlobStore
    database_url: str
    blob_url: str


class Services:
    """Starts PostgreSQL and moto when first asked; creates databases, buckets and stores."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self._pg: Server | None = None
        self._moto: str | None = None
        self._cleanups: list[Callable[[], None]] = []

    # ------------------------------------------------------------ PostgreSQL server

    def pg_server(self) -> Server:
        if self._pg is None:
            self._pg = ensure_server()
        return self._pg

    def new_pg_database(self) -> str:
        """A fresh, migrated PostgreSQL database (dropped at the end of the run)."""
        server = self.pg_server()
        name = f"skillreg_bench_{uuid.uuid4().hex[:12]}"
        server.create_database(name)
        self._cleanups.append(functools.partial(server.drop_database, name))
        url = server.url(name)
        _migrate(url)
        return url

    # ------------------------------------------------------------ SQLite

    def new_sqlite_database(self) -> str:
        path = self.scratch / f"registry-{uuid.uuid4().hex[:8]}.db"
        url = f"sqlite+aiosqlite:///{path}"
        _migrate(url)
        return url

    # ------------------------------------------------------------ S3, moto

    def s3_endpoint(self) -> str:
        """moto's S3 server, in its own process.

        The test harness runs moto in a thread of the test process; here it would share
        the interpreter lock with the registry being measured, and every S3 request would
        be charged to the registry twice. A separate process is what a real S3 is.
        """
        if self._moto is None:
            for name, value in FAKE_AWS_ENVIRONMENT.items():
                os.environ[name] = value
            for name in CLEARED_AWS_VARIABLES:
                os.environ.pop(name, None)
            port = _free_port()
            server = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self._cleanups.append(lambda: _stop(server))
            endpoint = f"http://127.0.0.1:{port}"
            _wait_for(endpoint, server)
            self._moto = endpoint
        return self._moto

    def new_bucket_url(self) -> str:
        endpoint = self.s3_endpoint()
        bucket = f"skillreg-bench-{uuid.uuid4().hex[:16]}"
        client = raw_client(endpoint)
        client.create_bucket(Bucket=bucket)
        client.close()
        return f"s3://{bucket}/blobs?{urlencode({'endpoint_url': endpoint, 'region': REGION})}"

    # ------------------------------------------------------------ local stores

    def new_local_blob_url(self) -> str:
        root = self.scratch / f"blobs-{uuid.uuid4().hex[:8]}"
        return root.as_uri()

    # ------------------------------------------------------------ backends

    def urls(self, kind: str) -> tuple[str, str]:
        """Fresh (database URL, blob URL) for a backend kind."""
        if kind == SQLITE_LOCAL:
            return self.new_sqlite_database(), self.new_local_blob_url()
        if kind == PG_S3:
            return self.new_pg_database(), self.new_bucket_url()
        if kind == PG_LOCAL:
            return self.new_pg_database(), self.new_local_blob_url()
        raise ValueError(f"unknown backend {kind!r}")

    @asynccontextmanager
    async def backend(
        self,
        kind: str,
        *,
        settings: Settings | None = None,
        failpoints: Failpoints = NO_FAILPOINTS,
        urls: tuple[str, str] | None = None,
    ) -> AsyncIterator[Backend]:
        """A registry on fresh storage of `kind` (or on `urls`), closed afterwards."""
        if urls is None:
            urls = await asyncio.to_thread(self.urls, kind)
        database_url, blob_url = urls
        effective = (settings or bench_settings()).model_copy(
            update={"database_url": database_url, "blob_url": blob_url}
        )
        engine = open_engine(effective)
        store = open_blobstore(blob_url, max_concurrency=effective.s3_max_concurrency)
        await store.ensure()
        registry = Registry(engine, store, effective, failpoints=failpoints)
        try:
            yield Backend(kind, registry, engine, store, database_url, blob_url)
        finally:
            await store.close()
            await engine.dispose()

    def close(self) -> None:
        for cleanup in reversed(self._cleanups):
            cleanup()
        self._cleanups.clear()


def open_engine(settings: Settings) -> AsyncEngine:
    return create_engine(
        settings.database_url,
        lock_timeout=settings.lock_timeout,
        statement_timeout=settings.statement_timeout,
        sqlite_busy_timeout=settings.sqlite_busy_timeout,
    )


def _migrate(url: str) -> None:
    async def run() -> None:
        engine = create_engine(url)
        try:
            await upgrade(engine)
        finally:
            await engine.dispose()

    asyncio.run(run())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for(endpoint: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"moto's server exited with {server.returncode}")
        try:
            with urllib.request.urlopen(endpoint, timeout=2):  # noqa: S310 - loopback only
                return
        except urllib.error.HTTPError:
            return  # it answers, if not with 200
        except OSError:
            time.sleep(0.1)  # polling a starting server
    raise RuntimeError("moto's server did not answer within 60 s")


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
