"""Hostile requests against a real `skillreg serve`, on SQLite and on PostgreSQL.

One server per database; a baseline (a skill, a pending proposal, a catalog listing) is
set up, then every case of the corpus is sent: numbers past every bound, malformed and
crafted tags, headers, request framing (on a raw socket), names, archives, and metadata
holding credentials. Every case must get a clean 4xx: no 5xx, no internals in any body
(paths, URLs, driver or library names, tracebacks), and nothing stored (blobs, versions,
skills, listings, jobs, proposals as they were after the baseline). Then the blob store is
taken away to see a 503 tell its kind of store and a correlation id, and nothing else,
while the log has the cause under the same id.

The server (its start-up is most of these tests' time) is shared by the module's tests,
one per database: none needs a fresh one. The corpus compares what is stored before and
after its own requests; the others write only what they check (a skill `located`) or
nothing, and put the blob store back as they found it.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from tests.corpus import fakes
from tests.corpus.archives import GOOD_FILES, good_zip, zip_of, zip_with_directory
from tests.http.helpers import digest, form
from tests.plugins.postgres import DATABASES, shared_database
from tests.support import serve
from tests.support.packages import package

# What a server refuses (a NUL, a huge number) depends on the database behind it.
pytestmark = [pytest.mark.both_databases, pytest.mark.asyncio(loop_scope="module")]

HUGE = "9" * 5000  # Python's int() refuses more than 4300 digits
SKILL = "/v1/workspaces/acme/skills/base"
LISTING = "/v1/catalog/listings/corpus-listing"
SECRETS = (fakes.GITHUB_TOKEN, fakes.AWS_ACCESS_KEY_ID, fakes.STRIPE_KEY, fakes.SLACK_TOKEN)
ROLES = (("acme", "owner"), ("acme", "admin"), ("catalog", "write"))


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Case:
    id: str
    send: Callable[[Corpus], Awaitable[Answer]]
    statuses: tuple[int, ...]
    code: str | None = None


class Corpus:
    """The server under attack, its client, and what the baseline created."""

    def __init__(self, process: serve.Process, client: httpx.AsyncClient, root: Path) -> None:
        self.process = process
        self.client = client
        self.root = root
        self.blobs = root / "blobs"
        self.proposal = 0

    def auth(self, role: str = "owner", workspace: str = "acme") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.process.token(role, workspace)}"}

    async def request(self, method: str, path: str, **kwargs: Any) -> Answer:
        response = await self.client.request(method, path, **kwargs)
        return Answer(response.status_code, dict(response.headers), response.content)

    async def raw(self, request: bytes) -> Answer:
        """Send `request` as is on a fresh connection; the first response, and what follows."""
        host, port = self.process.url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            writer.write(request)
            await writer.drain()
            async with asyncio.timeout(30):  # the server closes, or the test fails here
                received = await reader.read()
        finally:
            writer.close()
        head, _, body = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        return Answer(int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body)


def _post(path: str, body: str | bytes, *, auth: bool = True, **headers: str):
    async def send(c: Corpus) -> Answer:
        extra = c.auth() if auth else {}
        return await c.request(
            "POST",
            path,
            content=body,
            headers={"Content-Type": "application/json", **extra, **headers},
        )

    return send


def _get(path: str, **headers: str):
    return _call("GET", path, **headers)


def _call(method: str, path: str, **headers: str):
    async def send(c: Corpus) -> Answer:
        return await c.request(method, path, headers={**c.auth(), **headers})

    return send


def _raw(request: bytes):
    async def send(c: Corpus) -> Answer:
        return await c.raw(request)

    return send


def _publish(
    meta: dict[str, Any] | None = None, *, slug: str = "base", files: int = 2, **headers: str
):
    async def send(c: Corpus) -> Answer:
        parts, data = form(package(slug, files=files))
        if meta is not None:
            data = {"meta": json.dumps(meta)}
        return await c.request(
            "PUT",
            f"/v1/workspaces/acme/skills/{slug}",
            files=parts,
            data=data,
            headers={**c.auth(), **headers},
        )

    return send


def _put_manifest(body: dict[str, Any], **headers: str):
    async def send(c: Corpus) -> Answer:
        return await c.request(
            "PUT", SKILL, json=body, headers={**c.auth(), "If-None-Match": "*", **headers}
        )

    return send


def _decision(body: str, **headers: str):
    async def send(c: Corpus) -> Answer:
        path = f"/v1/workspaces/acme/proposals/{c.proposal}/decision"
        return await c.request(
            "POST",
            path,
            content=body,
            headers={"Content-Type": "application/json", **c.auth(), **headers},
        )

    return send


def _listing(data: bytes, listing: str = LISTING, **headers: str):
    async def send(c: Corpus) -> Answer:
        return await c.request(
            "PUT",
            listing,
            content=data,
            headers={
                "Content-Type": "application/zip",
                **c.auth("write", "catalog"),
                **headers,
            },
        )

    return send


def _blob(data: bytes, **params: str):
    async def send(c: Corpus) -> Answer:
        return await c.request(
            "PUT",
            f"/v1/workspaces/acme/blobs/{digest(data)}",
            content=data,
            params=params,
            headers={**c.auth(), "Content-Type": "application/octet-stream"},
        )

    return send


def _no_token(path: str, body: str = "{not json"):
    return _post(path, body, auth=False)


HUGE_TAG = f'"{HUGE}.0123456789abcdef"'
# A digit of another script: `str.isdigit` says yes, `int` says no.
SUPERSCRIPT_TAG = '"\u00b2.0123456789abcdef"'.encode("latin-1")
OTHER_ZIP = zip_of(
    [*((path, data) for path, (data, _) in GOOD_FILES.items()), ("references/more.md", b"more\n")]
)
SMUGGLED = (
    b"POST /v1/workspaces/acme/skills/base/restore HTTP/1.1\r\nHost: x\r\n"
    b"Content-Type: application/json\r\nContent-Length: 4\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
)

CASES = [
    # numbers: tags, versions, ids, sizes, query parameters, bodies
    Case("if-match-huge-put", _publish({}, files=5, **{"If-Match": HUGE_TAG}), (412,)),
    Case("restore-without-precondition", _post(f"{SKILL}/restore", '{"version": 1}'), (428,)),
    Case(
        "if-match-huge-restore-tagged",
        _post(f"{SKILL}/restore", '{"version": 1}', **{"If-Match": HUGE_TAG}),
        (412,),
    ),
    Case(
        "if-match-huge-state",
        _post(f"{SKILL}/state", '{"action": "pause"}', **{"If-Match": HUGE_TAG}),
        (412,),
    ),
    Case(
        "if-match-superscript-state",
        _post(f"{SKILL}/state", '{"action": "pause"}', **{"If-Match": SUPERSCRIPT_TAG}),
        (412,),
    ),
    Case(
        "if-match-huge-decision",
        _decision('{"decision": "keep_current"}', **{"If-Match": HUGE_TAG}),
        (412,),
    ),
    Case("if-match-huge-listing", _listing(OTHER_ZIP, **{"If-Match": HUGE_TAG}), (412,)),
    Case("if-match-huge-delete", _call("DELETE", SKILL, **{"If-Match": HUGE_TAG}), (412,)),
    Case("if-none-match-huge-get", _get(SKILL, **{"If-None-Match": HUGE_TAG}), (200,)),
    Case("version-path-huge", _get(f"{SKILL}/versions/{HUGE}"), (422,)),
    Case("version-query-huge", _get(f"{SKILL}/archive?version={HUGE}"), (422,)),
    Case("limit-huge", _get(f"/v1/workspaces/acme/skills?limit={HUGE}"), (422,)),
    Case("limit-negative", _get("/v1/workspaces/acme/skills?limit=-1"), (422,)),
    Case("job-id-huge", _get(f"/v1/workspaces/acme/jobs/{HUGE}"), (422,)),
    Case("job-id-64-bit-plus-one", _get(f"/v1/workspaces/acme/jobs/{2**63}"), (422,)),
    Case("proposal-id-huge", _get(f"/v1/workspaces/acme/proposals/{HUGE}"), (422,)),
    Case("history-cursor-huge", _get(f"{SKILL}/history?before={HUGE}.1"), (422,)),
    Case("diff-target-huge", _get(f"{SKILL}/diff?from=1&to=p{HUGE}"), (422,)),
    Case("restore-version-huge", _post(f"{SKILL}/restore", f'{{"version": {HUGE}}}'), (400,)),
    Case("restore-version-float", _post(f"{SKILL}/restore", '{"version": 1e400}'), (422,)),
    Case(
        "manifest-size-huge",
        _put_manifest({"files": [{"path": "SKILL.md", "digest": "0" * 64, "size": 10**30}]}),
        (422,),
    ),
    Case(
        "install-version-huge",
        _post(
            "/v1/workspaces/acme/installs", '{"listing": "corpus-listing", "version": 99999999999}'
        ),
        (422,),
    ),
    Case(
        "content-length-huge",
        _raw(
            f"PUT /v1/workspaces/acme/blobs/{'0' * 64} HTTP/1.1\r\nHost: x\r\n"
            f"Content-Length: {HUGE}\r\n\r\n".encode()
        ),
        (400, 413),
    ),
    # preconditions and other headers
    Case(
        "if-match-malformed",
        _post(f"{SKILL}/state", '{"action": "pause"}', **{"If-Match": '"'}),
        (400,),
    ),
    Case(
        "if-match-weak",
        _post(f"{SKILL}/state", '{"action": "pause"}', **{"If-Match": 'W/"1.0"'}),
        (412,),
    ),
    Case("if-none-match-not-star", _publish({}, **{"If-None-Match": '"1.x"'}), (400,)),
    Case(
        "bearer-long",
        _raw(
            b"GET "
            + SKILL.encode()
            + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + b"x" * 8000
            + b"\r\nConnection: close\r\n\r\n"
        ),
        (401,),
    ),
    Case(
        "bearer-latin1",
        _raw(
            b"GET "
            + SKILL.encode()
            + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer skr_\xe9\xff\r\n"
            + b"Connection: close\r\n\r\n"
        ),
        (401,),
    ),
    Case(
        "basic-auth",
        _raw(
            b"GET "
            + SKILL.encode()
            + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YTpi\r\nConnection: close\r\n\r\n"
        ),
        (401,),
    ),
    # framing (RFC 9112, 6.3), on a raw socket
    Case("content-length-and-chunked", _raw(SMUGGLED), (400,)),
    Case(
        "content-length-twice",
        _raw(
            b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"
        ),
        (400,),
    ),
    Case(
        "content-length-not-a-number",
        _raw(b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\na"),
        (400,),
    ),
    Case(
        "transfer-encoding-gzip",
        _raw(b"POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n"),
        (400,),
    ),
    # names
    Case("slug-too-long", _get(f"/v1/workspaces/acme/skills/{'a' * 65}"), (422,)),
    # Unicode slugs pass the route's pattern; the registry's name rule refuses upper case.
    Case("slug-upper", _get("/v1/workspaces/acme/skills/Base"), (400,)),
    Case("workspace-unicode", _get("/v1/workspaces/acm%C3%A9/skills"), (404, 422)),
    Case("agent-dots", _get(f"{SKILL}?agent=../x"), (422,)),
    Case("slug-nul", _get("/v1/workspaces/acme/skills/ba%00se"), (422,)),
    Case("digest-short", _get("/v1/workspaces/acme/blobs/abc"), (422,)),
    # archives
    Case(
        "zip-lies-about-entries",
        _listing(
            zip_with_directory(200_000, declared=1),
            "/v1/catalog/listings/lying-listing",
            **{"If-None-Match": "*"},
        ),
        (422,),
        "archive_rejected",
    ),
    # metadata holding credentials (the write path and the fields a client names)
    Case(
        "message-token",
        _publish(
            {"message": f"deploy with {fakes.GITHUB_TOKEN}"}, slug="fresh", **{"If-None-Match": "*"}
        ),
        (422,),
        "content_blocked",
    ),
    Case(
        "source-token",
        _publish(
            {"sources": ["chat:1", f"key {fakes.AWS_ACCESS_KEY_ID}"]},
            slug="fresh",
            **{"If-None-Match": "*"},
        ),
        (422,),
        "content_blocked",
    ),
    Case(
        "actor-token",
        _publish({"actor": fakes.STRIPE_KEY}, slug="fresh", **{"If-None-Match": "*"}),
        (422,),
        "content_blocked",
    ),
    Case(
        "install-key-token",
        _post(
            "/v1/workspaces/acme/installs",
            json.dumps({"listing": "corpus-listing", "key": fakes.SLACK_TOKEN}),
        ),
        (422,),
        "content_blocked",
    ),
    Case(
        "state-reason-token",
        _post(f"{SKILL}/state", json.dumps({"action": "pause", "reason": fakes.GITHUB_TOKEN})),
        (422,),
        "content_blocked",
    ),
    Case(
        "blob-token",
        _blob(f"token = {fakes.GITHUB_TOKEN}\n".encode()),
        (422,),
        "content_blocked",
    ),
    # a body is looked at only once the token is known (401 first)
    Case("no-token-restore", _no_token(f"{SKILL}/restore"), (401,)),
    Case("no-token-state", _no_token(f"{SKILL}/state"), (401,)),
    Case("no-token-decision", _no_token("/v1/workspaces/acme/proposals/1/decision"), (401,)),
    Case("no-token-install", _no_token("/v1/workspaces/acme/installs"), (401,)),
    Case("no-token-update", _no_token(f"{SKILL}/update"), (401,)),
    Case("malformed-json", _post(f"{SKILL}/restore", "{not json"), (400,)),
]


def _internals(corpus_root: Path, database_url: str) -> list[str]:
    """Strings a response body must never contain."""
    found = [str(corpus_root), "Traceback", "Errno", 'File "', "sqlalchemy", "psycopg"]
    found += ["aiosqlite", "botocore", "/tmp/", "site-packages"]
    match = re.match(r"postgresql\+psycopg://([^:@/]*)(?::[^@]*)?@([^/]+)/(.+)", database_url)
    if match:
        found += [match.group(2), match.group(3)]
    return found


async def _snapshot(c: Corpus, blobs: Path) -> dict[str, Any]:
    """What the registry holds, as far as the corpus could have changed it."""

    async def body(path: str, role: str = "owner", workspace: str = "acme") -> Any:
        response = await c.client.get(path, headers=c.auth(role, workspace))
        assert response.status_code == 200, (path, response.text)
        return response.json()

    return {
        "blobs": sorted(p.name for p in blobs.rglob("*") if p.is_file()),
        "skills": await body("/v1/workspaces/acme/skills"),
        "history": await body(f"{SKILL}/history"),
        "proposals": await body("/v1/workspaces/acme/proposals?pending_only=false"),
        "jobs": await body("/v1/workspaces/acme/jobs"),
        "listings": await body("/v1/catalog/listings", "write", "catalog"),
        "catalog": await body("/v1/workspaces/catalog/skills", "write", "catalog"),
    }


async def _baseline(c: Corpus) -> None:
    """A skill (`base`: two versions, automatic improvements off), a pending proposal, a listing."""
    created = await _publish({}, files=1, **{"If-None-Match": "*"})(c)
    assert created.status == 201, created.body
    second = await _publish({}, **{"If-Match": created.headers["etag"]})(c)
    assert second.status == 200, second.body
    # A person's write turns automatic improvements off: the learning write becomes a proposal.
    parts, _ = form(package("base", files=3))
    learned = await c.request(
        "PUT",
        SKILL,
        files=parts,
        data={"meta": json.dumps({"origin": "learning"})},
        headers={**c.auth(), "If-Match": second.headers["etag"]},
    )
    assert learned.status in (200, 201, 202), learned.body
    proposals = (await c.client.get("/v1/workspaces/acme/proposals", headers=c.auth())).json()[
        "items"
    ]
    assert len(proposals) == 1, proposals
    c.proposal = proposals[0]["id"]
    listed = await _listing(good_zip(), **{"If-None-Match": "*"})(c)
    assert listed.status == 201, listed.body


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """The server's folder: its database (SQLite), blobs and logs."""
    return tmp_path_factory.mktemp("served")


@pytest.fixture(scope="module", params=DATABASES)
def database_url(request, root) -> Iterator[str]:
    with shared_database(request, root) as url:
        yield url


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def corpus(database_url, root) -> AsyncIterator[Corpus]:
    env = serve.environment(database_url, root / "blobs")
    async with (
        serve.running(env, root, roles=ROLES) as process,
        httpx.AsyncClient(base_url=process.url, timeout=60) as client,
    ):
        c = Corpus(process, client, root)
        await _baseline(c)
        yield c


async def test_every_hostile_request_gets_a_clean_4xx_and_stores_nothing(corpus, database_url):
    before = await _snapshot(corpus, corpus.blobs)
    internals = _internals(corpus.root, database_url)
    wrong = []
    for case in CASES:
        answer = await case.send(corpus)
        text = answer.body.decode("utf-8", "replace")
        if answer.status not in case.statuses:
            wrong.append((case.id, answer.status, text[:300]))
        if case.code is not None and json.loads(answer.body).get("code") != case.code:
            wrong.append((case.id, "code", text[:300]))
        leaked = [s for s in (*internals, *SECRETS) if s in text]
        if leaked:
            wrong.append((case.id, "leaks", leaked))
    assert wrong == [], "\n".join(map(repr, wrong))
    assert await _snapshot(corpus, corpus.blobs) == before
    # The credentials the corpus sent were never stored, nor logged.
    stored = b"".join(p.read_bytes() for p in corpus.root.rglob("*.db*") if p.is_file())
    logs = corpus.process.logs()
    assert [s for s in SECRETS if s.encode() in stored or s in logs] == []


async def test_a_smuggled_request_is_refused_and_the_connection_closed(corpus):
    answer = await corpus.raw(SMUGGLED)
    assert answer.status == 400
    assert answer.headers["connection"] == "close"
    # Nothing after the first response: the pipelined GET was never answered.
    assert b"HTTP/1.1" not in answer.body


async def test_a_storage_outage_answers_its_kind_of_store_and_an_id_only(corpus):
    blobs = corpus.blobs
    moved = corpus.root / "blobs-away"
    blobs.rename(moved)
    blobs.write_bytes(b"not a directory")
    try:
        data = b"# fresh bytes for an upload\n"
        answer = await _blob(data)(corpus)
    finally:
        blobs.unlink()
        moved.rename(blobs)
    assert answer.status == 503, answer.body
    body = json.loads(answer.body)
    reference = body["details"]["correlation_id"]
    assert body["details"] == {"what": "blob store", "correlation_id": reference}
    assert body["detail"] == (
        f"the blob store is unavailable; retry later (correlation id {reference})"
    )
    assert str(corpus.root) not in answer.body.decode()
    # The cause is in the log, under the same id.
    line = next(x for x in corpus.process.logs().splitlines() if reference in x)
    assert str(blobs) in line


async def test_location_is_relative_and_the_access_log_has_no_query_string(corpus):
    parts, data = form(package("located", files=1))
    created = await corpus.client.put(
        "/v1/workspaces/acme/skills/located",
        files=parts,
        data=data,
        headers={**corpus.auth(), "If-None-Match": "*", "Host": "attacker.example"},
    )
    assert created.status_code == 201
    assert created.headers["location"] == "/v1/workspaces/acme/skills/located"
    secret = "skr_0123456789abcdef_" + "s" * 43
    answer = await corpus.client.get(f"/healthz?access_token={secret}")
    assert answer.status_code == 200
    logs = corpus.process.logs()
    assert "/healthz?[redacted]" in logs
    assert secret not in logs
