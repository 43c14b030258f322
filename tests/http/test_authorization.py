"""The authorisation matrix: every endpoint x every role x own and other workspace.

Expected: the token's own workspace answers per the role table (`registry.http.auth.ROLES`):
success when the role suffices, 403 `forbidden` when it does not; another workspace's
path answers 404 `not_found` for every role, whether or not the resource exists there;
no token, a malformed, unknown, revoked or wrong-secret token: 401.
"""

from __future__ import annotations

import itertools
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from registry.db import pending as db_pending
from registry.db import rescan as db_rescan
from registry.db import skills as db_skills
from registry.domain.access import Role
from registry.domain.model import Origin
from registry.http import throttle
from registry.http.app import create_app
from registry.http.auth import CATALOG_PUBLISH, ROLES
from registry.http.preconditions import entity_tag
from registry.http.throttle import AuthFailures
from registry.settings import Settings
from registry.wire import TargetRegistration
from tests.corpus.archives import LISTING, good_zip, tar_of
from tests.http.helpers import digest, form, publish, raw
from tests.support.packages import package
from tests.support.scopes import ACME

Request = Callable[[Any, str, str], Awaitable[tuple[str, str, dict[str, Any]]]]
"""(served, workspace, unique suffix) -> (method, path, httpx keyword arguments).

Requests always target `acme`; the setup they need (a fresh skill, a proposal) is made
in `acme` with the registry, so an allowed request can succeed and a refused one could
have. A token of the other workspace asks for acme's resources."""


def fixed(method: str, path: str, **kwargs: Any) -> Request:
    async def build(_served, w: str, _n: str):
        return method, path.format(w=w), kwargs

    return build


async def _put_skill(_served, w: str, n: str):
    slug = f"made-{n}"
    files, data = form(package(slug))
    return (
        "PUT",
        f"/v1/workspaces/{w}/skills/{slug}",
        {
            "files": files,
            "data": data,
            "headers": {"If-None-Match": "*"},
        },
    )


async def _put_blob(_served, w: str, n: str):
    data = f"blob {n}\n".encode()
    return "PUT", f"/v1/workspaces/{w}/blobs/{digest(data)}", {"content": data}


async def _fresh_skill(served, n: str) -> str:
    slug = f"fresh-{n}"
    await served.registry.write_package(ACME, slug, package(slug), expected_head=None, actor="t")
    return slug


async def _change_state(served, w: str, n: str):
    slug = await _fresh_skill(served, n)
    return (
        "POST",
        f"/v1/workspaces/{w}/skills/{slug}/state",
        {
            "json": {"action": "pause"},
            "headers": {"If-Match": "*"},
        },
    )


async def _restore(served, w: str, n: str):
    slug = await _fresh_skill(served, n)
    await served.registry.write_package(
        ACME, slug, package(slug, tag="2"), expected_head=1, actor="t"
    )
    return (
        "POST",
        f"/v1/workspaces/{w}/skills/{slug}/restore",
        {
            "json": {"version": 1},
            "headers": {"If-Match": "*"},
        },
    )


async def _delete(served, w: str, n: str):
    slug = await _fresh_skill(served, n)
    return "DELETE", f"/v1/workspaces/{w}/skills/{slug}", {"headers": {"If-Match": "*"}}


async def _yank(served, w: str, n: str):
    slug = await _fresh_skill(served, n)
    body = {"kind": "broken", "reason": "matrix"}
    return "POST", f"/v1/workspaces/{w}/skills/{slug}/versions/1/yank", {"json": body}


async def _unyank(served, w: str, n: str):
    slug = await _fresh_skill(served, n)
    await served.registry.yank(ACME, slug, 1, kind="broken", reason="matrix", actor="t")
    return "POST", f"/v1/workspaces/{w}/skills/{slug}/versions/1/unyank", {"json": {}}


async def _proposal(served, n: str) -> tuple[str, int]:
    slug = await _fresh_skill(served, n)
    await served.registry.pause_learning(ACME, slug, actor="t")
    pub = await served.registry.write_package(
        ACME,
        slug,
        package(slug, tag="learned"),
        expected_head=1,
        actor="job",
        origin=Origin.LEARNING,
    )
    assert pub.proposal is not None
    return slug, pub.proposal


async def _decide(served, w: str, n: str):
    _, proposal = await _proposal(served, n)
    return (
        "POST",
        f"/v1/workspaces/{w}/proposals/{proposal}/decision",
        {
            "json": {"decision": "keep_current"},
            "headers": {"If-Match": "*"},
        },
    )


async def _decide_many(served, w: str, n: str):
    _, proposal = await _proposal(served, n)
    body = {"decisions": [{"proposal": proposal, "decision": "keep_current"}]}
    return "POST", f"/v1/workspaces/{w}/decisions", {"json": body}


async def _drop_pending(served, w: str, n: str):
    """A waiting write, recorded directly (the served registry's capacity is never full)."""

    async def work(conn):
        skill = await db_skills.live_skill(conn, ACME, "demo")
        head = await db_skills.version(conn, skill, skill.head)
        manifest = await db_skills.manifest_entries(conn, "acme", head.manifest_id)
        return await db_pending.record(
            conn,
            ACME,
            f"waiting-{n}",
            skill_id=None,
            expected="new",
            manifest_id=head.manifest_id,
            manifest=manifest,
            origin="learning",
            actor="job",
            message="",
            sources=(),
            approvals=(),
            write_id=f"matrix-{n}",
            now=served.registry.ctx.clock.now(),
        )

    pending = await served.registry.ctx.locked("acme", work)
    return "DELETE", f"/v1/workspaces/{w}/pending-writes/{pending}", {}


async def _lift(served, w: str, n: str):
    slug = await _fresh_skill(served, n)
    await served.registry.delete(ACME, slug, actor="t")
    newest = (await served.registry.learning.suppressions("acme"))[0]
    return "DELETE", f"/v1/workspaces/{w}/suppressions/{newest.id}", {}


async def _record_load(_served, w: str, n: str):
    body = {"version": 1, "conversation": f"conv-{n}"}
    return "POST", f"/v1/workspaces/{w}/skills/demo/loads", {"json": body}


async def _get_proposal(served, w: str, n: str):
    _, proposal = await _proposal(served, n)
    return "GET", f"/v1/workspaces/{w}/proposals/{proposal}", {}


async def _put_listing(_served, _w: str, n: str):
    slug = f"listing-{n}"
    data = tar_of([(path, raw(value)) for path, value in package(slug).items()])
    headers = {"Content-Type": "application/gzip", "If-None-Match": "*"}
    return "PUT", f"/v1/catalog/listings/{slug}", {"content": data, "headers": headers}


async def _install(_served, w: str, n: str):
    return "POST", f"/v1/workspaces/{w}/installs", {"json": {"listing": LISTING, "key": n}}


async def _update(_served, w: str, n: str):
    return "POST", f"/v1/workspaces/{w}/skills/{LISTING}/update", {"json": {"key": n}}


async def _get_job(served, w: str, n: str):
    queued = await served.registry.marketplace.enqueue_install(ACME, LISTING, key=f"matrix-{n}")
    return "GET", f"/v1/workspaces/{w}/jobs/{queued.job.id}", {}


async def _get_rescan(served, _w: str, _n: str):
    queued = await served.registry.rescan.start()
    return "GET", f"/v1/rescan/{queued.job.id}", {}


async def _approve_review(served, w: str, n: str):
    slug = await _fresh_skill(served, n)
    info = await served.registry.package_info(ACME, slug, 1)

    async def work(conn):
        return await db_rescan.insert_review(
            conn,
            workspace="acme",
            skill_id=info.skill_id,
            version=1,
            manifest_hash=info.manifest_hash,
            package_digest=info.manifest_hash,
            ruleset=served.registry.rescan.ruleset,
            findings=[],
            paused_use=False,
            opened_at=served.registry.ctx.clock.now(),
        )

    review = await served.registry.ctx.locked("acme", work)
    return "POST", f"/v1/workspaces/{w}/reviews/{review}/approve", {"json": {}}


def _target_id(n: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"target-{n}"))


async def _register_target(_served, w: str, n: str):
    body = {"agent": "personal", "path": f"/srv/{n}", "host": "host", "mode": "link"}
    return "PUT", f"/v1/workspaces/{w}/targets/{_target_id(n)}", {"json": body}


async def _record_applied(served, w: str, n: str):
    target_id = _target_id(n)
    registration = TargetRegistration(agent="personal", path=f"/srv/{n}", host="host", mode="link")
    await served.registry.targets.register(ACME.workspace, target_id, registration)
    record = {"manifest_hash": None, "version": None, "outcome": "removed", "error": None}
    body = {"expected": None, "record": record, "action": "removed"}
    return "PUT", f"/v1/workspaces/{w}/targets/{target_id}/skills/demo", {"json": body}


async def _report_trust(served, w: str, n: str):
    target_id = _target_id(n)
    registration = TargetRegistration(agent="personal", path=f"/srv/{n}", host="host", mode="link")
    await served.registry.targets.register(ACME.workspace, target_id, registration)
    body = {"state": "verified", "since": "2026-12-05T12:00:00+00:00", "seq": 1}
    return "PUT", f"/v1/workspaces/{w}/targets/{target_id}/trust", {"json": body}


async def _put_discovery(served, w: str, _n: str):
    current = await served.registry.discovery.settings(ACME)
    condition = {"If-Match": f'"{current.revision}"'} if current.enabled else {"If-None-Match": "*"}
    body = {"everything": True}
    return "PUT", f"/v1/workspaces/{w}/discovery", {"json": body, "headers": condition}


WELL_KNOWN = "/discovery/{w}/personal/.well-known/agent-skills"


def _artifact(method: str, suffix: str) -> Request:
    """acme's `demo` at version 1: `{tag}.zip`, or `{tag}/<path>`."""

    async def build(served, w: str, _n: str):
        info = await served.registry.package_info(ACME, "demo", 1)
        tag = entity_tag(info.skill_id, 1, info.manifest_hash).strip('"')
        return method, f"{WELL_KNOWN.format(w=w)}/demo/{tag}{suffix}", {}

    return build


def _snapshot(method: str, *, root: bool) -> Request:
    """acme's index as it is now, as a snapshot: `v{N}.0.0/index.json`."""

    async def build(served, w: str, _n: str):
        found = await served.registry.discovery.current(ACME)
        base = "/.well-known/agent-skills" if root else WELL_KNOWN.format(w=w)
        return method, f"{base}/v{found.number}.0.0/index.json", {}

    return build


LEGACY = "/discovery/{w}/personal/.well-known/skills"
DEMO = package("demo")
DEMO_BLOB = digest(DEMO["SKILL.md"])
SKILL = "/v1/workspaces/{w}/skills/demo"

# One request per endpoint that needs a token.
MATRIX: dict[str, Request] = {
    "service_status": fixed("GET", "/v1/status"),
    "list_skills": fixed("GET", "/v1/workspaces/{w}/skills"),
    "get_skill": fixed("GET", SKILL),
    "head_skill": fixed("HEAD", SKILL),
    "get_version": fixed("GET", SKILL + "/versions/1"),
    "get_archive": fixed("GET", SKILL + "/archive"),
    "get_attestation": fixed("GET", SKILL + "/versions/1/attestation"),
    "put_skill": _put_skill,
    "get_history": fixed("GET", SKILL + "/history"),
    "get_diff": fixed("GET", SKILL + "/diff", params={"from": "1", "to": "1"}),
    "get_state": fixed("GET", SKILL + "/state"),
    "restore_skill": _restore,
    "change_state": _change_state,
    "delete_skill": _delete,
    "yank_version": _yank,
    "unyank_version": _unyank,
    "list_revocations": fixed("GET", "/v1/workspaces/{w}/revocations"),
    "list_proposals": fixed("GET", "/v1/workspaces/{w}/proposals"),
    "get_proposal": _get_proposal,
    "decide_proposal": _decide,
    "head_blob": fixed("HEAD", f"/v1/workspaces/{{w}}/blobs/{DEMO_BLOB}"),
    "get_blob": fixed("GET", f"/v1/workspaces/{{w}}/blobs/{DEMO_BLOB}"),
    "put_blob": _put_blob,
    "get_desired": fixed("GET", "/v1/workspaces/{w}/desired"),
    "register_target": _register_target,
    "record_applied": _record_applied,
    "report_trust": _report_trust,
    "list_listings": fixed("GET", "/v1/catalog/listings"),
    "get_listing": fixed("GET", f"/v1/catalog/listings/{LISTING}"),
    "get_listing_archive": fixed("GET", f"/v1/catalog/listings/{LISTING}/archive"),
    "put_listing": _put_listing,
    "install_listing": _install,
    "update_skill": _update,
    "list_jobs": fixed("GET", "/v1/workspaces/{w}/jobs"),
    "get_job": _get_job,
    "start_rescan": fixed("POST", "/v1/rescan", json={}),
    "get_rescan": _get_rescan,
    "list_reviews": fixed("GET", "/v1/workspaces/{w}/reviews"),
    "approve_review": _approve_review,
    "list_decisions": fixed("GET", "/v1/workspaces/{w}/decisions"),
    "decide_many": _decide_many,
    "list_pending_writes": fixed("GET", "/v1/workspaces/{w}/pending-writes"),
    "apply_pending_writes": fixed("POST", "/v1/workspaces/{w}/pending-writes/apply"),
    "drop_pending_write": _drop_pending,
    "list_suppressions": fixed("GET", "/v1/workspaces/{w}/suppressions"),
    "lift_suppression": _lift,
    "learning_status": fixed("GET", "/v1/workspaces/{w}/learning"),
    "record_load": _record_load,
    "list_loads": fixed("GET", "/v1/workspaces/{w}/loads", params={"conversation": "c"}),
    "search_skills": fixed("GET", "/v1/workspaces/{w}/search", params={"q": "demo"}),
    "get_discovery_settings": fixed("GET", "/v1/workspaces/{w}/discovery"),
    "put_discovery_settings": _put_discovery,
    # acme's index is private; the root serves acme (SKILLREG_DISCOVERY_ROOT, below)
    "get_discovery_root_index": fixed("GET", "/.well-known/agent-skills/index.json"),
    "head_discovery_root_index": fixed("HEAD", "/.well-known/agent-skills/index.json"),
    "get_discovery_index": fixed("GET", WELL_KNOWN + "/index.json"),
    "head_discovery_index": fixed("HEAD", WELL_KNOWN + "/index.json"),
    "get_discovery_archive": _artifact("GET", ".zip"),
    "head_discovery_archive": _artifact("HEAD", ".zip"),
    "get_discovery_file": _artifact("GET", "/SKILL.md"),
    "head_discovery_file": _artifact("HEAD", "/SKILL.md"),
    "get_discovery_root_versions": fixed("GET", "/.well-known/agent-skills/versions.json"),
    "head_discovery_root_versions": fixed("HEAD", "/.well-known/agent-skills/versions.json"),
    "get_discovery_versions": fixed("GET", WELL_KNOWN + "/versions.json"),
    "head_discovery_versions": fixed("HEAD", WELL_KNOWN + "/versions.json"),
    "get_discovery_root_snapshot": _snapshot("GET", root=True),
    "head_discovery_root_snapshot": _snapshot("HEAD", root=True),
    "get_discovery_snapshot": _snapshot("GET", root=False),
    "head_discovery_snapshot": _snapshot("HEAD", root=False),
    "get_legacy_root_index": fixed("GET", "/.well-known/skills/index.json"),
    "head_legacy_root_index": fixed("HEAD", "/.well-known/skills/index.json"),
    "get_legacy_index": fixed("GET", LEGACY + "/index.json"),
    "head_legacy_index": fixed("HEAD", LEGACY + "/index.json"),
    "get_legacy_root_file": fixed("GET", "/.well-known/skills/demo/SKILL.md"),
    "head_legacy_root_file": fixed("HEAD", "/.well-known/skills/demo/SKILL.md"),
    "get_legacy_file": fixed("GET", LEGACY + "/demo/SKILL.md"),
    "head_legacy_file": fixed("HEAD", LEGACY + "/demo/SKILL.md"),
}
# Endpoints outside any workspace: every workspace's token is "own" there.
UNSCOPED = {
    "service_status",
    "list_listings",
    "get_listing",
    "get_listing_archive",
    "put_listing",
    "start_rescan",
    "get_rescan",
}


@pytest.fixture
async def served(serve):
    return await serve(settings=Settings(discovery_root="acme"))


@dataclass
class Outcome:
    endpoint: str
    role: str
    where: str
    status: int
    code: str | None
    # The problem's detail, to tell one refusal from another in a failure report.
    detail: str | None = field(default=None, compare=False)


async def test_every_route_has_a_role_and_every_role_entry_a_route(registry):
    document = create_app(registry).openapi()
    operations = [op for item in document["paths"].values() for op in item.values()]
    names = {op["operationId"] for op in operations} | {"openapi"}
    assert names == set(ROLES)
    assert set(MATRIX) == {name for name, role in ROLES.items() if role is not None}


async def _call(served, request: Request, workspace: str, n: str, headers: dict[str, str]):
    method, path, kwargs = await request(served, workspace, n)
    kwargs = dict(kwargs)
    kwargs["headers"] = {**kwargs.get("headers", {}), **headers}
    return await served.client.request(method, path, **kwargs)


def _code(response) -> str | None:
    if (
        response.request.method != "HEAD"
        and response.headers.get("content-type") == "application/problem+json"
    ):
        return response.json()["code"]
    return None


async def _setup(served) -> None:
    """demo in both workspaces; a catalog listing, installed in acme; a private index."""
    for workspace in ("acme", "globex"):
        r = await publish(served, "demo", DEMO, workspace=workspace)
        assert r.status_code == 201, r.text
    await served.registry.marketplace.import_listing(LISTING, good_zip(), actor="publisher")
    assert (await served.registry.marketplace.install(ACME, LISTING)).succeeded
    await served.registry.discovery.update(ACME, actor="owner", everything=True)


async def test_the_matrix(served):
    await _setup(served)
    wrong: list[Outcome] = []
    counter = itertools.count()
    for (endpoint, request), role in itertools.product(MATRIX.items(), Role):
        needed = ROLES[endpoint]
        assert needed is not None
        for where in ("own", "other"):
            token = served.auth(role.value, other=where == "other")
            # The token of the other workspace asks for acme's resources.
            response = await _call(served, request, "acme", str(next(counter)), token)
            status, code = response.status_code, _code(response)
            if endpoint in CATALOG_PUBLISH:  # acme's and globex's tokens alike
                ok = status == 403 and code == "forbidden"
            elif where == "other" and endpoint not in UNSCOPED:
                ok = status == 404 and (code == "not_found" or endpoint.startswith("head_"))
            elif role.allows(needed):
                ok = status < 400
            else:
                ok = status == 403 and (code == "forbidden" or endpoint.startswith("head_"))
            if not ok:
                detail = response.json().get("detail") if code is not None else None
                wrong.append(Outcome(endpoint, role.value, where, status, code, detail))
    assert wrong == []


async def test_only_the_catalog_workspace_publishes_listings_with_its_write_roles(served):
    counter = itertools.count()
    wrong = []
    for role in Role:
        issued = await served.registry.tokens.create("catalog", role.value, actor="test")
        headers = {"Authorization": f"Bearer {issued.token}"}
        response = await _call(served, _put_listing, "catalog", f"c{next(counter)}", headers)
        allowed = role.allows(ROLES["put_listing"])
        expected = 201 if allowed else 403
        if response.status_code != expected:
            wrong.append((role.value, response.status_code, _code(response)))
    assert wrong == []


async def test_no_token_or_a_bad_token_is_401_everywhere(serve):
    # Hundreds of wrong tokens from one address: past the default hold-off, which its own
    # test covers.
    served = await serve(settings=Settings(discovery_root="acme", auth_failure_limit=100_000))
    await _setup(served)
    revoked = await served.registry.tokens.create("acme", "admin", actor="test")
    await served.registry.tokens.revoke(revoked.info.id, actor="test")
    good = served.tokens["admin"]
    wrong_secret = good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB")
    unknown = "skr_" + "0" * 16 + "_" + "A" * 43
    candidates = {
        "none": {},
        "malformed": {"Authorization": "Bearer not-a-token"},
        "basic": {"Authorization": "Basic dXNlcjpwYXNz"},
        "revoked": {"Authorization": f"Bearer {revoked.token}"},
        "wrong secret": {"Authorization": f"Bearer {wrong_secret}"},
        "unknown": {"Authorization": f"Bearer {unknown}"},
    }
    wrong = []
    for n, (endpoint, request) in enumerate(MATRIX.items()):
        # One request (and the set-up it needs) per endpoint, sent with every bad token:
        # each is refused, so what the request needs is still there for the next.
        method, path, kwargs = await request(served, "acme", f"x{n}")
        for label, headers in candidates.items():
            sent = {**kwargs, "headers": {**kwargs.get("headers", {}), **headers}}
            response = await served.client.request(method, path, **sent)
            if response.status_code != 401:
                wrong.append((endpoint, label, response.status_code))
            elif response.request.method != "HEAD":
                assert response.json()["code"] == "unauthenticated"
                assert response.headers["www-authenticate"].startswith("Bearer")
    assert wrong == []


async def test_public_endpoints_need_no_token(served):
    for path in ("/healthz", "/readyz", "/metrics", "/openapi.json"):
        assert (await served.client.get(path)).status_code == 200, path


async def test_the_token_is_checked_before_the_body_is_parsed(served):
    """No token and a malformed body: 401, not 422 (issue 15, item 7)."""
    await _setup(served)
    paths = {
        "restore": "/v1/workspaces/acme/skills/demo/restore",
        "state": "/v1/workspaces/acme/skills/demo/state",
        "decision": "/v1/workspaces/acme/proposals/1/decision",
        "install": "/v1/workspaces/acme/installs",
        "update": "/v1/workspaces/acme/skills/demo/update",
    }
    wrong = []
    for name, path in paths.items():
        for body in (b"{not json", b'{"version": "one"}', b""):
            r = await served.client.post(
                path, content=body, headers={"Content-Type": "application/json"}
            )
            if r.status_code != 401:
                wrong.append((name, body, r.status_code))
    assert wrong == []
    # With a token, the body decides: 400 if it does not parse, 422 if it does not fit.
    owner = served.auth("owner")
    r = await served.client.post(paths["restore"], content=b"{not json", headers=owner)
    assert (r.status_code, r.json()["code"]) == (400, "bad_request")
    r = await served.client.post(paths["restore"], json={"version": "one"}, headers=owner)
    assert (r.status_code, r.json()["code"]) == (422, "request_invalid")
    assert r.json()["errors"][0]["loc"] == ["body", "version"]


TARGET = "0f0e0d0c-0b0a-4908-8706-050403020100"


async def test_routes_with_a_json_body_authorize_before_they_parse_it(served):
    """The token, its workspace and its role decide before the body: 401, 404, 403, then 400."""
    await _setup(served)
    routes = {  # route name -> method, path in acme
        "decide_many": ("POST", "/v1/workspaces/acme/decisions"),
        "record_load": ("POST", "/v1/workspaces/acme/skills/demo/loads"),
        "put_discovery_settings": ("PUT", "/v1/workspaces/acme/discovery"),
        "register_target": ("PUT", f"/v1/workspaces/acme/targets/{TARGET}"),
        "record_applied": ("PUT", f"/v1/workspaces/acme/targets/{TARGET}/skills/demo"),
        "report_trust": ("PUT", f"/v1/workspaces/acme/targets/{TARGET}/trust"),
    }
    wrong = []
    for name, (method, path) in routes.items():
        needed = ROLES[name]
        assert needed is not None
        allowed = next(r for r in Role if r.allows(needed))
        callers: list[tuple[dict[str, str], int, str]] = [
            ({}, 401, "unauthenticated"),
            (served.auth(allowed.value, other=True), 404, "not_found"),
            *(
                (served.auth(role.value), 403, "forbidden")
                for role in Role
                if not role.allows(needed)
            ),
        ]
        for headers, status, code in callers:
            for body in (b"{not json", b'{"decisions": 3, "version": "one"}', b""):
                r = await served.client.request(
                    method,
                    path,
                    content=body,
                    headers={"Content-Type": "application/json", **headers},
                )
                if (r.status_code, r.json().get("code")) != (status, code):
                    wrong.append((name, status, body, r.status_code, r.text[:120]))
        # With a token that may, the body decides: 400 if it does not parse, else 422.
        may = {**served.auth(allowed.value), "Content-Type": "application/json"}
        for body, status, code in (
            (b"{not json", 400, "bad_request"),
            (b"", 400, "bad_request"),
            (b'{"decisions": 3, "version": "one", "agent": 3}', 422, "request_invalid"),
        ):
            r = await served.client.request(method, path, content=body, headers=may)
            if (r.status_code, r.json().get("code")) != (status, code):
                wrong.append((name, "allowed", body, r.status_code, r.text[:120]))
    assert wrong == []


async def test_an_address_that_keeps_sending_wrong_tokens_is_held_off(serve):
    served = await serve(settings=Settings(auth_failure_limit=3, auth_failure_window=3600))
    skills = "/v1/workspaces/acme/skills"
    wrong = {"Authorization": f"Bearer skr_{'0' * 16}_{'x' * 43}"}
    for _ in range(3):
        assert (await served.client.get(skills, headers=wrong)).status_code == 401
    # From now on the token is not even looked at: a right one is held off too, and the
    # console's sign-in form is no way around it.
    for headers in (wrong, served.auth("read")):
        held = await served.client.get(skills, headers=headers)
        assert (held.status_code, held.json()["code"]) == (429, "too_many_failures")
        assert 3590 <= int(held.headers["retry-after"]) <= 3600
    page = await served.client.get("/console/signin")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    signin = await served.client.post(
        "/console/signin", data={"csrf": csrf, "token": served.tokens["read"]}
    )
    assert signin.status_code == 429
    assert "retry-after" in signin.headers
    # No token is no failure: public endpoints and public indexes still answer.
    assert (await served.client.get("/healthz")).status_code == 200


def test_failures_leave_the_window_and_memory_stays_bounded(monkeypatch):
    now = [1000.0]
    failures = AuthFailures(limit=2, window=60, clock=lambda: now[0])
    failures.failed("192.0.2.1")
    assert failures.retry_after("192.0.2.1") is None
    now[0] += 30
    failures.failed("192.0.2.1")
    assert failures.retry_after("192.0.2.1") == 30  # until the first failure is 60 s old
    now[0] += 30
    assert failures.retry_after("192.0.2.1") is None
    monkeypatch.setattr(throttle, "MAX_ADDRESSES", 3)
    for n in range(5):
        failures.failed(f"198.51.100.{n}")
    assert list(failures.failures) == ["198.51.100.2", "198.51.100.3", "198.51.100.4"]
