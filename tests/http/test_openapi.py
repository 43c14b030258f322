"""The OpenAPI document: served, checked in, and fuzzed with schemathesis (both databases).

schemathesis generates requests from the served document for every operation, with an
admin token of the workspace `acme` (so requests get past authentication into the real
logic), once with generated path parameters and `If-None-Match: *` (so that writes get
past the precondition into validation and the write path), once pinned to a skill and a
blob that exist, and once with `If-Match` and `If-None-Match` generated for every
operation on that skill and blob (any string, not only the documented `*` or a tag), so
that the precondition parser sees what a client may send. (A fourth pass, generated path
parameters without any precondition, went: its writes stopped at 428, and its reads are
the first pass's, whose `If-None-Match: *` matters only where the resource exists, which
the second pass reads without it.) Any 5xx is a failure. Bounded
and deterministic: a fixed number of examples per operation, derandomised.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
from pathlib import Path
from typing import Any

import hypothesis
import requests
import schemathesis
from hypothesis import HealthCheck, given

from registry.http.openapi import build, render
from tests.http.helpers import digest, publish
from tests.support.packages import package

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
EXAMPLES = 5  # per operation: what a fuzz run finds, it finds in the first few


async def test_the_served_document_is_the_checked_in_one(served):
    served_document = (await served.client.get("/openapi.json")).json()
    checked_in = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    assert served_document == checked_in, "run `make openapi` and commit docs/openapi.json"
    assert render(await build()) == DOCUMENT.read_text(encoding="utf-8")


def _session() -> requests.Session:
    """One keep-alive connection for a pass (a new one per request was most of its time),
    and no cookie kept: each request stands alone, as with a session of its own."""
    session = requests.Session()
    session.cookies.set_policy(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
    return session


def _run(strategy: Any, label: str, base_url: str, session: requests.Session) -> list[str]:
    failures: list[str] = []

    @hypothesis.settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[hypothesis.Phase.generate],
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        response = case.call(base_url=base_url, session=session, timeout=60)
        if response.status_code >= 500:
            failures.append(f"{label}: {response.status_code} {response.text[:300]}")

    run()
    return failures


def _fuzz(
    document: dict[str, Any],
    base_url: str,
    headers: dict[str, str],
    pinned: dict[str, str],
) -> list[str]:
    schema = schemathesis.openapi.from_dict(document)
    failures: list[str] = []
    with _session() as session:
        for result in schema.get_all_operations():
            operation = result.ok()
            names = {p.name for p in operation.iter_parameters() if p.location == "path"}
            path_parameters = {k: v for k, v in pinned.items() if k in names}
            strategy = operation.as_strategy(path_parameters=path_parameters, headers=headers)
            failures += _run(strategy, operation.label, base_url, session)
    return failures


def _generated_preconditions(document: dict[str, Any]) -> dict[str, Any]:
    """`document` with `If-Match` and `If-None-Match` required strings on every operation."""
    changed = json.loads(json.dumps(document))
    for item in changed["paths"].values():
        for operation in item.values():
            params = [
                p
                for p in operation.get("parameters", [])
                if p.get("name") not in ("If-Match", "If-None-Match")
            ]
            params += [
                {"name": name, "in": "header", "required": True, "schema": {"type": "string"}}
                for name in ("If-Match", "If-None-Match")
            ]
            operation["parameters"] = params
    return changed


async def test_schemathesis_finds_no_server_error(serve):
    served = await serve(socket=True)  # schemathesis calls from another thread
    files = package("demo", files=2)
    assert (await publish(served, "demo", files)).status_code == 201
    document = (await served.client.get("/openapi.json")).json()
    auth = served.auth("admin")
    blob = digest(files["SKILL.md"])
    passes = [
        # Writes past the precondition check, into validation and the write path.
        ({**auth, "If-None-Match": "*"}, {"workspace": "acme"}),
        (auth, {"workspace": "acme", "slug": "demo", "digest": blob}),
    ]
    failures = []
    for headers, pinned in passes:
        failures += await asyncio.to_thread(_fuzz, document, served.url, headers, pinned)
    # Preconditions generated, on the skill and blob that exist.
    failures += await asyncio.to_thread(
        _fuzz, _generated_preconditions(document), served.url, auth, passes[1][1]
    )
    assert failures == []
    assert (await served.client.get("/readyz")).status_code == 200
