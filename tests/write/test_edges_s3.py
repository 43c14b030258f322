"""A blob store that hangs cannot hold a write: timeouts, the upload deadline, no 100-continue.

The stores here are raw sockets on loopback that speak just enough HTTP to misbehave.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from blobstore.s3 import S3BlobStore
from registry import Scope
from registry.errors import StorageUnavailable
from registry.settings import Settings
from tests.harness.s3 import FAKE_AWS_ENVIRONMENT
from tests.support.cli import run
from tests.support.packages import package
from tests.support.state import db_state, live_claims

ACME = Scope("acme")
BIG = 2 * 1024 * 1024 - 4096  # under the 2 MiB file limit, over botocore's 1 MB threshold


class RawServer:
    """A loopback TCP server; `respond(request_head, connection)` decides what happens."""

    def __init__(self, respond: Callable[[bytes, socket.socket], None]) -> None:
        self.respond = respond
        self.heads: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                head += chunk
            self.heads.append(head.split(b"\r\n\r\n")[0])
            self.respond(head, conn)

    def close(self) -> None:
        self.listener.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def silent_server() -> Iterator[RawServer]:
    """Accepts every connection, reads the request, and never answers."""
    server: RawServer

    def hold(_head: bytes, conn: socket.socket) -> None:
        server.held.append(conn)

    server = RawServer(hold)
    yield server
    server.close()


@pytest.fixture
def continue_then_close_server() -> Iterator[RawServer]:
    """Answers `100 Continue` and cuts the connection, whatever the request asked for."""

    def cut(_head: bytes, conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        conn.close()

    server = RawServer(cut)
    yield server
    server.close()


async def _write_through(make_registry, server, settings):
    store = S3BlobStore(
        "stuck-bucket",
        endpoint_url=f"http://127.0.0.1:{server.port}",
        connect_timeout=settings.s3_connect_timeout,
        read_timeout=settings.s3_read_timeout,
        retry_attempts=settings.retry_attempts,
        retry_base_delay=0,
    )
    registry = await make_registry(blobs=store, settings=settings)
    files = package("pdf-report", files=2)
    files["assets/big.bin"] = b"\x00" * BIG
    before = await db_state(registry)
    started = time.monotonic()
    with pytest.raises(StorageUnavailable) as caught:
        await registry.write_package(ACME, "pdf-report", files, expected_head=None, actor="u")
    elapsed = time.monotonic() - started
    assert caught.value.what == "blob store"
    assert await db_state(registry) == before
    assert await live_claims(registry) == 0
    await store.close()
    return elapsed


async def test_a_store_that_never_answers_fails_the_write_within_its_upload_deadline(
    make_registry, aws_env, silent_server
):
    # Before: botocore's 60 s timeouts times the retries held the write for about 4 minutes.
    # The store would hold each of the 4 attempts for 3 s; the write gives up after 1 s.
    settings = Settings(upload_timeout=1.0, s3_read_timeout=3.0, s3_connect_timeout=3.0)
    elapsed = await _write_through(make_registry, silent_server, settings)
    # upload_timeout plus a margin for the work around it (docs/write-path.md, "Deadlines").
    assert elapsed < 1.0 + 2.0, elapsed


async def test_s3_read_timeouts_are_settings(make_registry, aws_env, silent_server):
    settings = Settings(upload_timeout=30.0, s3_read_timeout=0.3, retry_attempts=2)
    elapsed = await _write_through(make_registry, silent_server, settings)
    assert elapsed < 30.0 / 2, elapsed


async def test_no_upload_waits_for_100_continue(make_registry, aws_env, continue_then_close_server):
    # With `Expect: 100-continue`, a connection cut right after the interim `100 Continue`
    # made botocore loop for ever at 100% CPU. Uploads no longer ask for it.
    settings = Settings(upload_timeout=5.0, retry_attempts=2)
    await _write_through(make_registry, continue_then_close_server, settings)
    assert continue_then_close_server.heads
    assert not [h for h in continue_then_close_server.heads if b"100-continue" in h.lower()]


def test_the_cli_reports_an_s3_outage_in_one_line_that_says_it_once(embedded):
    """Issue 15, item 9: no tenacity lines, and "blob store unavailable" said once."""
    tmp_path = embedded
    skillreg = str(Path(sys.executable).with_name("skillreg"))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SKILLREG_", "AWS_"))},
        **FAKE_AWS_ENVIRONMENT,
    }
    # The registry made in-process (the embedded default under `tmp_path`); what is proved
    # is what the real binary prints on its standard error.
    run("init")
    folder = tmp_path / "pdf-report"
    for path, data in package("pdf-report").items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data if isinstance(data, bytes) else data.data)
    # Nothing listens on port 1: every put fails to connect, is retried, and gives up.
    env["SKILLREG_BLOB_URL"] = "s3://skills?endpoint_url=http://127.0.0.1:1"
    result = subprocess.run(
        [skillreg, "publish", str(folder), "--workspace", "acme"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 6  # configuration or connection
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: blob store unavailable: put ")
    assert lines[0].count("unavailable") == 1
