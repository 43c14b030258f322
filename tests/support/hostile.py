"""A registry that lies: a raw HTTP/1.1 server answering `skillreg sync` with what a test scripts.

It speaks just enough of the sync protocol (`GET .../desired`, `PUT .../targets/...`,
`GET .../blobs/{digest}`) to reach every decision of the client, and it controls its bytes
on the wire: a body that never ends, one trickled a byte at a time, a Content-Length that
lies, a redirect. No uvicorn, no registry and no database: what it serves is a dict the
test builds (`desired_state`, `skill`) and breaks on purpose.

It signs what it serves with its own key (`key`), as a registry whose key an attacker
holds would: the host pins that key (`root()`), so the checks on paths, sizes and time are
tried past the signature; the attacks on the signature itself (a key the host does not
trust, rollback, freeze, mix-and-match) set `seq`, `issued`, `expires` or `signed`.

It records every request (method, path, headers) and how many body bytes it managed to
send on each, so a test can prove the client stopped reading.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from blake3 import blake3

from registry.client.trust import TrustRoot
from registry.domain.signed_state import Freshness, StateEntry, sign_state, state_document
from registry.services.signing import Signer

Body = bytes | Callable[[], AsyncIterator[bytes]]


@dataclass
class Reply:
    """An answer: status, headers, and a body (bytes, or chunks from an async generator).

    A bytes body gets a truthful Content-Length unless `headers` sets one; a generator's
    body is delimited by closing the connection.
    """

    status: int = 200
    body: Body = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, data: Any, status: int = 200) -> Reply:
        return cls(status, json.dumps(data).encode(), {"content-type": "application/json"})


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    sent: int = 0  # body bytes written before the client went away (or the body ended)


Handler = Callable[[Seen], Reply]


def endless(chunk: bytes = b" " * 65536) -> Callable[[], AsyncIterator[bytes]]:
    """A body that never ends."""

    async def chunks() -> AsyncIterator[bytes]:
        while True:
            yield chunk

    return chunks


def trickle(first: bytes, every: float) -> Callable[[], AsyncIterator[bytes]]:
    """`first`, then one more byte every `every` seconds, for ever."""

    async def chunks() -> AsyncIterator[bytes]:
        yield first
        while True:
            await asyncio.sleep(every)
            yield b" "

    return chunks


def digest(data: bytes) -> str:
    return blake3(data).hexdigest()


def manifest_hash(files: list[dict[str, Any]]) -> str:
    """The manifest hash by its documented encoding (docs/package-format.md), computed here.

    Written out rather than taken from `registry.domain.manifest`, so a server can hash
    even a manifest the registry's own types would refuse to build (a NUL in a path).
    """
    return blake3(canonical(files)).hexdigest()


def package_digest(files: list[dict[str, Any]]) -> str:
    """The canonical package digest (docs/trust.md): SHA-256 of the same encoding."""
    return hashlib.sha256(canonical(files)).hexdigest()


def canonical(files: list[dict[str, Any]]) -> bytes:
    lines = sorted(
        (
            f["path"].encode("utf-8", "surrogatepass"),
            b"\0".join(
                (
                    f["path"].encode("utf-8", "surrogatepass"),
                    f["digest"].encode(),
                    b"%d" % f["size"],
                    b"x" if f["executable"] else b"-",
                )
            )
            + b"\n",
        )
        for f in files
    )
    return b"skillreg-manifest-v1\n" + b"".join(line for _, line in lines)


def skill(
    slug: str, files: dict[str, bytes], *, version: int = 1, sizes: dict[str, int] | None = None
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """A desired-state entry for `files` (sizes as declared, if given), and its blobs."""
    entries = [
        {
            "path": path,
            "digest": digest(data),
            "size": (sizes or {}).get(path, len(data)),
            "executable": False,
        }
        for path, data in files.items()
    ]
    entry = {
        "slug": slug,
        "state": "active",
        "use_paused": False,
        "version": version,
        "manifest_hash": manifest_hash(entries),
        "files": entries,
    }
    return entry, {digest(data): data for data in files.values()}


def skill_md(slug: str) -> bytes:
    return f"---\nname: {slug}\ndescription: A skill of the hostile registry.\n---\n".encode()


class HostileRegistry:
    """The server. `state` is the desired state it serves; `blobs` the bytes it has;
    `routes` (method, path fragment, handler) come first and answer what they match."""

    def __init__(self, workspace: str = "acme", agent: str = "personal") -> None:
        self.state: dict[str, Any] = {
            "workspace": workspace,
            "agent": agent,
            "etag": '"hostile"',
            "skills": [],
            "target": None,
            "applied": [],
        }
        self.blobs: dict[str, bytes] = {}
        self.key = Signer.generate()
        self.past_keys: list[Signer] = []  # listed in the signed state's `keys`
        self.seq = 1
        self.issued = datetime.now(UTC)
        self.expires = self.issued + timedelta(hours=1)
        self.attestations: dict[str, str] = {}  # slug -> the digest its signed entry names
        self.signed: str | bool | None = True  # True: sign `state`; else sent as it is
        self.keys_document: dict[str, Any] | None = None
        self.routes: list[tuple[str, str, Handler]] = []
        self.seen: list[Seen] = []
        self.url = ""
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def add(self, slug: str, files: dict[str, bytes], **options: Any) -> dict[str, Any]:
        entry, blobs = skill(slug, files, **options)
        self.state["skills"].append(entry)
        self.blobs |= blobs
        return entry

    def root(self) -> TrustRoot:
        """What a host pins to trust this server's key."""
        return TrustRoot(keys={self.key.key_id: self.key.public})

    def sign(self, skills: list[dict[str, Any]] | None = None, key: Signer | None = None) -> str:
        """The signed state of `skills` (the served ones by default), at `seq`/`issued`."""
        entries = [
            StateEntry(
                slug=e["slug"],
                state=e["state"],
                use_paused=e["use_paused"],
                version=e["version"],
                manifest_hash=e["manifest_hash"],
                package_digest=None if e["files"] is None else package_digest(e["files"]),
                attestation=self.attestations.get(e["slug"]),
            )
            for e in (self.state["skills"] if skills is None else skills)
        ]
        document = state_document(
            self.state["workspace"],
            self.state["agent"],
            Freshness(self.seq, self.issued),
            self.expires,
            entries,
            keys={k.key_id: k.public_key_hex() for k in (*self.past_keys, self.key)},
        )
        return sign_state(document, (key or self.key).private).decode()

    def served_state(self) -> dict[str, Any]:
        if self.signed is True:
            return {**self.state, "signed": self.sign()}
        return {**self.state, "signed": self.signed or None}

    def route(self, method: str, fragment: str, handler: Handler) -> None:
        self.routes.append((method, fragment, handler))

    def count(self, method: str, fragment: str = "") -> int:
        return sum(1 for s in self.seen if s.method == method and fragment in s.path)

    async def start(self, host: str = "127.0.0.1") -> str:
        self._server = await asyncio.start_server(self._serve, host, 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://{host}:{port}"
        return self.url

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task

    def _answer(self, seen: Seen) -> Reply:
        for method, fragment, handler in self.routes:
            if seen.method == method and fragment in seen.path:
                return handler(seen)
        if seen.method == "GET" and "/desired" in seen.path:
            reply = Reply.json(self.served_state())
            reply.headers["etag"] = self.state["etag"]
            return reply
        if seen.method == "GET" and seen.path.endswith("/keys.json") and self.keys_document:
            return Reply.json(self.keys_document)
        if seen.method == "PUT" and "/targets/" in seen.path:
            return Reply.json({})
        if seen.method == "GET" and "/blobs/" in seen.path:
            data = self.blobs.get(seen.path.rsplit("/", 1)[-1])
            if data is not None:
                return Reply(200, data, {"content-type": "application/octet-stream"})
        return Reply.json({"code": "not_found", "detail": "no such thing", "status": 404}, 404)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._one(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away: what a hostile server is made to see
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        if length:
            await reader.readexactly(length)
        seen = Seen(method, target.split("?", 1)[0], headers)
        self.seen.append(seen)
        reply = self._answer(seen)
        out = dict(reply.headers)
        if isinstance(reply.body, bytes):
            out.setdefault("content-length", str(len(reply.body)))
        out["connection"] = "close"
        status = f"HTTP/1.1 {reply.status} Hostile\r\n"
        writer.write(
            (status + "".join(f"{k}: {v}\r\n" for k, v in out.items()) + "\r\n").encode("latin-1")
        )
        if isinstance(reply.body, bytes):
            writer.write(reply.body)
            await writer.drain()
            seen.sent = len(reply.body)
            return
        async for chunk in reply.body():
            writer.write(chunk)
            await writer.drain()
            seen.sent += len(chunk)
