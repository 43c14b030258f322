"""Oversized and malformed bodies are refused without being read whole (both databases).

The oversized cases talk raw HTTP/1.1 over a socket, the way a misbehaving client would:
they keep sending until the server answers or drops the connection, and the test then
checks, from the server's own count of body bytes read (`/metrics`), that the server
stopped reading right after the limit, and that the client could not send the rest.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

import h11
import pytest
from blake3 import blake3
from starlette.types import Message, Receive, Scope, Send

from registry.http.limits import BodyLimit
from registry.http.metrics import Metrics
from registry.settings import Settings
from tests.http.helpers import BLOBS, SKILLS, digest, publish
from tests.support.packages import skill_md
from tests.support.state import blob_rows, db_state, live_claims, store_digests

KiB = 1024
MiB = 1024 * KiB
SMALL = Settings(max_file_bytes=64 * KiB, max_package_bytes=256 * KiB)
CHUNK = 64 * KiB
PLANNED = 1024 * MiB  # what the client would send if nobody stopped it


@pytest.fixture
def serve(serve):
    """On a socket: what a server reads of a body, and when it stops, is the subject here."""
    return functools.partial(serve, socket=True)


@pytest.fixture
async def served(serve):
    return await serve()


async def body_bytes_read(served) -> float:
    text = (await served.client.get("/metrics")).text
    match = re.search(r"^skillreg_request_body_bytes_total (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


async def raw_request(served, head: str, chunks: Iterator[bytes]) -> tuple[int, int]:
    """Send `head` and then `chunks` until the server answers; (status, bytes sent)."""
    host, port = served.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    sent = 0
    async with asyncio.timeout(120):  # a hang guard, not a timing assertion
        response = asyncio.create_task(reader.readuntil(b"\r\n\r\n"))
        writer.write(head.encode("latin-1"))
        try:
            for chunk in chunks:
                if response.done():
                    break
                writer.write(chunk)
                await writer.drain()
                sent += len(chunk)
        except (ConnectionError, OSError):
            pass  # the server hung up on the rest of the body: expected
        status_line = (await response).split(b"\r\n", 1)[0]
    writer.close()
    return int(status_line.split()[1]), sent


def chunked(total: int, size: int = CHUNK) -> Iterator[bytes]:
    block = b"x" * size
    for _ in range(total // size):
        yield b"%x\r\n%s\r\n" % (size, block)
    yield b"0\r\n\r\n"


def head(method: str, path: str, token: str, extra: str) -> str:
    return f"{method} {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token}\r\n{extra}\r\n"


async def nothing_stored(served, before):
    assert await db_state(served.registry) == before["db"]
    assert await store_digests(served.registry.blobs) == before["store"]
    assert await blob_rows(served.registry) == before["rows"]
    assert await live_claims(served.registry) == 0


async def snapshot(served):
    return {
        "db": await db_state(served.registry),
        "store": await store_digests(served.registry.blobs),
        "rows": await blob_rows(served.registry),
    }


async def test_a_declared_length_over_the_limit_is_refused_before_reading(serve):
    served = await serve(settings=SMALL)
    before = await snapshot(served)
    read_before = await body_bytes_read(served)
    token = served.tokens["write"]
    path = f"{BLOBS}/{'a' * 64}"
    # Over this endpoint's limit (64 KiB), under the app-wide cap: refused after auth.
    status, _ = await raw_request(
        served, head("PUT", path, token, f"Content-Length: {MiB}\r\n"), iter([b"x" * CHUNK] * 16)
    )
    assert status == 413
    # Over every endpoint's limit: refused before routing.
    status, _ = await raw_request(
        served, head("PUT", path, token, f"Content-Length: {100 * 1024 * MiB}\r\n"), iter(())
    )
    assert status == 413
    assert await body_bytes_read(served) == read_before
    await nothing_stored(served, before)


async def test_an_endless_chunked_blob_is_cut_off_right_after_the_limit(serve):
    served = await serve(settings=SMALL)
    before = await snapshot(served)
    read_before = await body_bytes_read(served)
    extra = "Transfer-Encoding: chunked\r\nContent-Type: application/octet-stream\r\n"
    status, sent = await raw_request(
        served, head("PUT", f"{BLOBS}/{'b' * 64}", served.tokens["write"], extra), chunked(PLANNED)
    )
    assert status == 413
    read = await body_bytes_read(served) - read_before
    # The server read the limit and at most what one socket read delivers beyond it.
    assert SMALL.max_file_bytes < read <= SMALL.max_file_bytes + MiB
    # The client was stopped long before it could send what it planned.
    assert sent < PLANNED // 8
    await nothing_stored(served, before)


async def test_a_multipart_file_over_the_file_limit_is_cut_off_while_streaming(serve):
    served = await serve(settings=SMALL)
    before = await snapshot(served)
    read_before = await body_bytes_read(served)
    boundary = "xyzzy"

    def body() -> Iterator[bytes]:
        def chunk(data: bytes) -> bytes:
            return b"%x\r\n%s\r\n" % (len(data), data)

        yield chunk(
            f'--{boundary}\r\nContent-Disposition: form-data; name="SKILL.md"; filename="SKILL.md"'
            f"\r\n\r\n".encode()
            + skill_md("big")
            + f'\r\n--{boundary}\r\nContent-Disposition: form-data; name="big.bin"; '
            f'filename="big.bin"\r\n\r\n'.encode()
        )
        block = b"y" * CHUNK
        for _ in range(PLANNED // CHUNK):
            yield chunk(block)

    extra = (
        f"Transfer-Encoding: chunked\r\nIf-None-Match: *\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
    )
    status, sent = await raw_request(
        served, head("PUT", f"{SKILLS}/big", served.tokens["write"], extra), body()
    )
    assert status == 413
    read = await body_bytes_read(served) - read_before
    assert read <= SMALL.max_file_bytes + MiB
    assert sent < PLANNED // 8
    await nothing_stored(served, before)


async def test_the_limit_error_names_the_rule(serve):
    served = await serve(settings=SMALL)
    files = [
        ("SKILL.md", ("SKILL.md", skill_md("fat"))),
        ("fat.bin", ("fat.bin", b"z" * (SMALL.max_file_bytes + 1))),
    ]
    r = await served.client.put(
        f"{SKILLS}/fat", files=files, headers={"If-None-Match": "*", **served.auth("write")}
    )
    assert r.status_code == 413
    assert r.json()["code"] == "limit_exceeded"
    assert r.json()["details"]["rule"] == "max_file_bytes"
    assert r.json()["details"]["path"] == "fat.bin"


async def test_too_many_files_are_refused_while_streaming(serve):
    served = await serve(settings=Settings(max_files=3))
    files = [("SKILL.md", ("SKILL.md", skill_md("many")))]
    files += [(f"f{i}.txt", (f"f{i}.txt", b"%d" % i)) for i in range(5)]
    r = await served.client.put(
        f"{SKILLS}/many", files=files, headers={"If-None-Match": "*", **served.auth("write")}
    )
    assert r.status_code == 413
    assert r.json()["details"]["rule"] == "max_files"


async def test_malformed_bodies_are_refused_and_store_nothing(served):
    before = await snapshot(served)
    write = {"If-None-Match": "*", **served.auth("write")}
    meta = (
        b'--x\r\nContent-Disposition: form-data; name="meta"\r\n\r\n{"executable": 3}\r\n--x--\r\n'
    )
    cases = [  # headers, body, status, code
        ({"Content-Type": "application/json"}, b"{not json", 400, "bad_request"),
        ({"Content-Type": "application/json"}, b'{"files": "nope"}', 422, "request_invalid"),
        (
            {"Content-Type": "application/json"},
            b'{"files": [], "extra": 1}',
            422,
            "request_invalid",
        ),
        ({"Content-Type": "application/json"}, b"", 400, "bad_request"),
        ({"Content-Type": "text/plain"}, b"SKILL.md", 415, "unsupported_media_type"),
        ({}, b"", 415, "unsupported_media_type"),
        ({"Content-Type": "multipart/form-data"}, b"--x\r\n", 400, "bad_request"),
        (
            {"Content-Type": "multipart/form-data; boundary=x"},
            b'--x\r\nContent-Disposition: form-data; name="SKILL.md"\r\n\r\nunterminated',
            400,
            "bad_request",
        ),
        (
            {"Content-Type": "multipart/form-data; boundary=x"},
            meta,
            422,
            "request_invalid",
        ),
        # A boundary over the parser's 256 bytes is refused by its constructor, not its `write`.
        ({"Content-Type": "multipart/form-data; boundary=" + "B" * 300}, b"x", 400, "bad_request"),
    ]
    wrong = []
    for headers, body, status, code in cases:
        r = await served.client.put(
            f"{SKILLS}/malformed", content=body, headers={**write, **headers}
        )
        if r.status_code != status or r.json().get("code") != code:
            wrong.append((headers, body[:40], r.status_code, r.text[:200]))
    assert wrong == []
    r = await served.client.put(f"{BLOBS}/{'c' * 63}", content=b"x", headers=served.auth("write"))
    assert r.status_code == 422  # not a digest: the path parameter fails its pattern
    r = await served.client.put(
        f"{BLOBS}/{digest(b'x')}", content=b"y", headers=served.auth("write")
    )
    assert r.status_code == 422
    await nothing_stored(served, before)


async def test_text_the_database_cannot_hold_is_refused_as_invalid(served):
    before = await snapshot(served)
    write = {"If-None-Match": "*", **served.auth("write")}
    files = [("SKILL.md", ("SKILL.md", skill_md("texty")))]
    for meta in (
        '{"message": "nul \\u0000 inside"}',
        '{"actor": "two\\nlines"}',
        '{"sources": ["' + "s" * 501 + '"]}',
        '{"sources": [""]}',
        '{"origin": "restore"}',
    ):
        r = await served.client.put(
            f"{SKILLS}/texty", files=files, data={"meta": meta}, headers=write
        )
        assert (r.status_code, r.json()["code"]) == (422, "request_invalid"), meta
    r = await served.client.get(SKILLS, params={"after": "a\x00b"}, headers=served.auth("read"))
    assert r.status_code == 422
    await nothing_stored(served, before)


async def test_a_client_that_disconnects_mid_upload_is_no_server_error(served, caplog, monkeypatch):
    before = await snapshot(served)
    route = "/v1/workspaces/{workspace}/blobs/{digest}"
    # The server runs in this test's loop: its record of the request is the event to wait for.
    recorded = asyncio.Event()
    observe = Metrics.observe_request

    def observed(self: Metrics, method: str, path: str, status: int, seconds: float) -> None:
        observe(self, method, path, status, seconds)
        if path == route:
            recorded.set()

    monkeypatch.setattr(Metrics, "observe_request", observed)
    host, port = served.url.removeprefix("http://").split(":")
    _, writer = await asyncio.open_connection(host, int(port))
    token = served.tokens["write"]
    writer.write(
        f"PUT {BLOBS}/{'a' * 64} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/octet-stream\r\nContent-Length: {CHUNK * 4}\r\n\r\n".encode()
        + b"x" * CHUNK
    )
    await writer.drain()
    writer.close()  # the rest of the body never comes: the server reads a disconnect
    await asyncio.wait_for(recorded.wait(), 30)
    text = (await served.client.get("/metrics")).text
    assert f'route="{route}",status="499"' in text
    assert f'route="{route}",status="500"' not in text
    assert "unexpected error" not in caplog.text
    assert "Traceback" not in caplog.text
    await nothing_stored(served, before)


@dataclass
class Exchange:
    status: int
    body: bytes
    complete: bool  # the response ended where its framing said, not with the connection


async def exchange(served, request: h11.Request, body: Iterator[bytes]) -> Exchange:
    """Send `request` with `body` and read the whole answer, both at once like a client."""
    host, port = served.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    conn = h11.Connection(h11.CLIENT)

    async def upload() -> None:
        try:
            writer.write(conn.send(request))
            for chunk in body:
                writer.write(conn.send(h11.Data(data=chunk)))
                await writer.drain()
            writer.write(conn.send(h11.EndOfMessage()))
            await writer.drain()
        except (ConnectionError, OSError, h11.LocalProtocolError):
            pass  # the server answered and hung up on the rest of the body

    sending = asyncio.create_task(upload())
    async with asyncio.timeout(120):  # a hang guard, not a timing assertion
        answer = await read_response(reader, conn)
    sending.cancel()
    writer.close()
    return answer


async def read_response(reader: asyncio.StreamReader, conn: h11.Connection) -> Exchange:
    answer = Exchange(0, b"", complete=False)
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError:
            return answer  # the connection ended inside the response
        if event is h11.NEED_DATA:
            try:
                conn.receive_data(await reader.read(CHUNK))
            except ConnectionError:
                conn.receive_data(b"")
        elif isinstance(event, h11.Response):
            answer.status = event.status_code
        elif isinstance(event, h11.Data):
            answer.body += event.data
        elif isinstance(event, h11.EndOfMessage):
            answer.complete = True
            return answer
        elif isinstance(event, h11.ConnectionClosed):
            return answer


async def test_a_get_with_a_large_body_still_gets_the_whole_streamed_archive(served, caplog):
    # Incompressible files, so the archive streams as many pieces, long after its headers.
    files = {
        "SKILL.md": skill_md("streamed"),
        **{f"data/{i}.bin": blake3(b"%d" % i).digest(length=512 * KiB) for i in range(4)},
    }
    assert (await publish(served, "streamed", files)).status_code == 201
    path = f"{SKILLS}/streamed/archive"
    expected = (await served.client.get(path, headers=served.auth("read"))).content
    assert len(expected) > 2 * MiB
    auth = ("Authorization", f"Bearer {served.tokens['read']}")
    answers = []
    # Over the 64 KiB a request may send to this route: one the server drains before the
    # headers go out, one it is still reading while the archive streams.
    for size in (3 * CHUNK, 16 * CHUNK):
        framings = {
            "Content-Length": ("Content-Length", str(size)),
            "chunked": ("Transfer-Encoding", "chunked"),
        }
        for framing, header in framings.items():
            request = h11.Request(
                method="GET", target=path, headers=[("Host", "test"), auth, header]
            )
            answer = await exchange(served, request, iter([b"x" * CHUNK] * (size // CHUNK)))
            answers.append((size, framing, answer.status, answer.complete, answer.body == expected))
    # A body that no GET route reads is no reason to refuse or cut off the download.
    assert answers == [
        (size, framing, 200, True, True)
        for size in (3 * CHUNK, 16 * CHUNK)
        for framing in ("Content-Length", "chunked")
    ]
    assert "Exception in ASGI application" not in caplog.text


async def test_bytes_past_the_limit_after_the_response_started_are_dropped_not_refused():
    """An app that reads its body only after it started to answer gets no 413 mid-answer."""
    incoming = [{"type": "http.request", "body": b"x" * CHUNK, "more_body": True}] * 5
    incoming.append({"type": "http.request", "body": b"", "more_body": False})
    sent: list[Message] = []
    seen = bytearray()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        while True:
            message = await receive()
            seen.extend(message["body"])
            if not message["more_body"]:
                break
        await send({"type": "http.response.body", "body": b"done"})

    async def receive() -> Message:
        return incoming.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    limited = BodyLimit(app, settings=Settings(), metrics=Metrics())
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [(b"transfer-encoding", b"chunked")],
    }
    await limited(scope, receive, send)
    # The start drained 256 KiB; the rest passed the 64 KiB limit and reached the app empty.
    assert seen == b""
    assert incoming == []
    assert [m.get("status") for m in sent] == [200, None]
    assert (b"connection", b"close") in sent[0]["headers"]
    assert sent[1]["body"] == b"done"
