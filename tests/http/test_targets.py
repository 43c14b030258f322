"""The endpoints of sync over HTTP: the desired state and its ETag, targets and their records.

The reconciler's side (tests/materialize/test_sync*.py) drives them through `skillreg sync`;
here they are called as any client would, for what the client does not exercise: every
change that must change the tag, the compare-and-swap on a record, the refusals.
"""

from __future__ import annotations

import uuid
from typing import get_args

import pytest

from registry import wire
from registry.services.materialize.report import ACTIONS
from registry.services.materialize.source import OUTCOMES
from registry.settings import Settings
from tests.http.helpers import publish
from tests.support.packages import package
from tests.support.scopes import ACME
from tests.support.targets import rows

DESIRED = f"/v1/workspaces/{ACME.workspace}/desired"
TARGET = str(uuid.uuid4())
TARGETS = f"/v1/workspaces/{ACME.workspace}/targets"
PLACE = {"agent": "personal", "path": "/srv/agent/skills", "host": "agent-1", "mode": "link"}


def _record(manifest_hash=None, version=None, outcome="removed", error=None) -> dict:
    return {"manifest_hash": manifest_hash, "version": version, "outcome": outcome, "error": error}


async def _get(served, *, tag: str | None = None, **params):
    headers = {**served.auth("read"), **({"If-None-Match": tag} if tag else {})}
    return await served.client.get(DESIRED, params=params, headers=headers)


async def _register(served, target: str = TARGET, **place):
    body = PLACE | place
    return await served.client.put(f"{TARGETS}/{target}", json=body, headers=served.auth("read"))


async def _put_record(served, slug: str, body: dict, target: str = TARGET):
    return await served.client.put(
        f"{TARGETS}/{target}/skills/{slug}", json=body, headers=served.auth("read")
    )


async def test_the_desired_state_lists_heads_and_the_files_of_skills_in_use(served):
    assert (await publish(served, "alpha", package("alpha"))).status_code == 201
    assert (await publish(served, "beta", package("beta"))).status_code == 201
    await served.registry.stop_using(ACME, "beta", actor="t")
    response = await _get(served)
    assert response.status_code == 200
    body = response.json()
    assert response.headers["etag"] == body["etag"]
    assert response.headers["cache-control"] == "no-cache"
    alpha, beta = body["skills"]
    assert (alpha["slug"], alpha["version"], alpha["state"], alpha["use_paused"]) == (
        "alpha",
        1,
        "active",
        False,
    )
    assert sorted(f["path"] for f in alpha["files"]) == sorted(package("alpha"))
    assert (beta["slug"], beta["use_paused"], beta["files"]) == ("beta", True, None)
    assert (body["target"], body["applied"]) == (None, [])


async def test_the_etag_changes_with_heads_use_registration_and_records(served):
    await publish(served, "alpha", package("alpha"))
    tags = [(await _get(served, target=TARGET)).headers["etag"]]

    async def changed_by(label: str) -> None:
        tag = (await _get(served, target=TARGET)).headers["etag"]
        assert tag not in tags, f"{label} did not change the tag"
        tags.append(tag)
        again = await _get(served, target=TARGET, tag=tag)
        assert (again.status_code, again.content) == (304, b""), label
        assert again.headers["etag"] == tag

    head = await served.client.head("/v1/workspaces/acme/skills/alpha", headers=served.auth())
    headers = {"If-Match": head.headers["etag"]}
    await publish(served, "alpha", package("alpha", tag="two"), headers=headers)
    await changed_by("a new head")
    await served.registry.stop_using(ACME, "alpha", actor="t")
    await changed_by("pausing its use")
    assert (await _register(served)).status_code == 200
    await changed_by("registering the target")
    assert (await _register(served, path="/elsewhere")).status_code == 200
    await changed_by("moving the target")
    assert (
        await _put_record(
            served, "alpha", {"expected": None, "record": _record(), "action": "removed"}
        )
    ).status_code == 200
    await changed_by("a record")
    assert (await _get(served, tag=tags[-1])).status_code == 200  # another representation
    unknown = await _get(served, target=TARGET, tag='"nothing", W/' + tags[-1])
    assert unknown.status_code == 200  # a weak tag never matches


async def test_a_record_is_a_compare_and_swap_and_a_retry_changes_nothing(served):
    pub = await publish(served, "alpha", package("alpha"))
    manifest_hash = pub.json()["manifest_hash"]
    await _register(served)
    applied = _record(manifest_hash, 1, "applied")
    body = {"expected": None, "record": applied, "action": "written", "drift": []}
    first = await _put_record(served, "alpha", body)
    assert first.status_code == 200
    assert first.json() == {
        "record": {"slug": "alpha", **applied},
        "changed": True,
        "state_tag": None,
    }
    events = await rows(served.registry, "events")
    retry = await _put_record(served, "alpha", body)  # a lost reply, sent again
    assert retry.json()["changed"] is False
    assert await rows(served.registry, "events") == events

    stale = {"expected": None, "record": _record(), "action": "removed"}
    conflict = await _put_record(served, "alpha", stale)
    assert conflict.status_code == 409
    assert conflict.json()["code"] == "state_conflict"

    drift = [{"path": "SKILL.md", "kind": "modified"}]
    failed = _record(manifest_hash, 1, "failed", "integrity_error: a blob is damaged")
    body = {
        "expected": applied,
        "record": failed,
        "action": "failed",
        "error_code": "integrity_error",
        "drift": drift,
    }
    assert (await _put_record(served, "alpha", body)).json()["changed"] is True
    [row] = await rows(served.registry, "materializations")
    assert (row["outcome"], row["error"]) == ("failed", failed["error"])
    event = (await rows(served.registry, "events"))[-1]
    assert (event["kind"], event["slug"], event["version"]) == ("materialize_failed", "alpha", 1)
    assert event["payload"] == {**_where(), "action": "failed", "error": "integrity_error"}
    [summary] = (await served.registry.status("acme")).materialization.targets
    assert (summary.path, summary.host, summary.applied, summary.failed) == (
        PLACE["path"],
        PLACE["host"],
        1,  # on disk: the failure changed nothing there
        1,
    )


def _where() -> dict:
    return {"target_id": TARGET, "target": PLACE["path"], "host": PLACE["host"], "mode": "link"}


async def test_registering_is_idempotent_and_bound_to_one_scope(served):
    first = await _register(served)
    assert (first.status_code, first.json()["changed"]) == (200, True)
    assert first.json()["target"] == {
        "target_id": TARGET,
        **{k: PLACE[k] for k in ("path", "host", "mode")},
    }
    again = await _register(served)
    assert again.json()["changed"] is False
    other_agent = await _register(served, agent="helper")
    assert (other_agent.status_code, other_agent.json()["code"]) == (409, "target_mismatch")

    globex = served.auth("read", other=True)
    taken = await served.client.put(
        f"/v1/workspaces/globex/targets/{TARGET}", json=PLACE, headers=globex
    )
    assert (taken.status_code, taken.json()["code"]) == (409, "state_conflict")
    assert "acme" not in taken.text  # it says the id is taken, never where


async def test_refusals(served):
    await publish(served, "alpha", package("alpha"))
    unregistered = await _put_record(
        served, "alpha", {"expected": None, "record": _record(), "action": "removed"}
    )
    assert (unregistered.status_code, unregistered.json()["code"]) == (404, "target_not_found")
    await _register(served)
    for record in (
        _record(outcome="applied"),  # applied names what it applied
        _record("0" * 64, None, "removed"),  # a hash without a version
        _record("0" * 64, 1, "removed"),  # removed holds nothing
        _record(outcome="gone"),
        _record(error="x" * 5000, outcome="failed"),
    ):
        response = await _put_record(
            served, "alpha", {"expected": None, "record": record, "action": "failed"}
        )
        assert response.status_code == 422, record
    bad_target = await served.client.get(
        DESIRED, params={"target": "not-a-uuid"}, headers=served.auth("read")
    )
    assert bad_target.status_code == 422
    bad_place = await _register(served, mode="hardlink")
    assert bad_place.status_code == 422
    bad_agent = await served.client.get(
        DESIRED, params={"agent": "-bad"}, headers=served.auth("read")
    )
    assert bad_agent.status_code == 422
    other = await served.client.get(DESIRED, headers=served.auth("read", other=True))
    assert (other.status_code, other.json()["code"]) == (404, "not_found")


@pytest.mark.parametrize("role", ["read", "write", "owner", "admin"])
async def test_every_role_may_sync(served, role):
    response = await served.client.get(DESIRED, headers=served.auth(role))
    assert response.status_code == 200


def test_the_wire_names_the_engines_actions_and_outcomes():
    assert set(get_args(wire.Action)) == set(ACTIONS)
    assert set(get_args(wire.Outcome)) == set(OUTCOMES)


@pytest.mark.both_databases
async def test_a_read_token_cannot_store_control_or_bidi_text(served):
    # Before: a record's error took escape sequences (`skillreg status` printed them raw)
    # and NUL (503 "database unavailable" on PostgreSQL); a path or host took U+202E and
    # C1 controls.
    await publish(served, "alpha", package("alpha"))
    assert (await _register(served)).status_code == 200
    for place in (
        {"path": "/srv/\u202eexe.txt"},
        {"path": "/srv/\x85skills"},
        {"host": "agent\u2066-1"},
        {"host": "agent\x00"},
    ):
        response = await _register(served, str(uuid.uuid4()), **place)
        assert (response.status_code, response.json()["code"]) == (422, "request_invalid"), place
    for error in (
        "\x1b[2J\x1b]0;owned\x07",
        "\x1b]8;;https://example.invalid\x07click\x1b]8;;\x07",
        "\x1b[31mred",
        "a\x00b",
    ):
        body = {"expected": None, "record": _record(outcome="failed", error=error)}
        response = await _put_record(served, "alpha", body | {"action": "failed"})
        assert (response.status_code, response.json()["code"]) == (422, "request_invalid"), error
    targets = await rows(served.registry, "materialization_targets")
    assert [(t["path"], t["host"]) for t in targets] == [(PLACE["path"], PLACE["host"])]
    assert await rows(served.registry, "materializations") == []
    # A multi-line error is text.
    body = {"expected": None, "record": _record(outcome="failed", error="one\n\ttwo")}
    assert (await _put_record(served, "alpha", body | {"action": "failed"})).status_code == 200


async def test_a_workspace_registers_at_most_its_target_limit(serve):
    served = await serve(settings=Settings(capacity_targets=2))
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    assert (await _register(served, first)).status_code == 200
    assert (await _register(served, second)).status_code == 200
    refused = await _register(served, str(uuid.uuid4()))
    assert (refused.status_code, refused.json()["code"]) == (422, "target_limit_reached")
    assert refused.json()["details"] == {"limit": 2}
    # A registered target still moves and records; another workspace has its own limit.
    assert (await _register(served, first, path="/srv/moved")).json()["changed"] is True
    other = await served.client.put(
        f"/v1/workspaces/globex/targets/{uuid.uuid4()}",
        json=PLACE,
        headers=served.auth("read", other=True),
    )
    assert other.status_code == 200
    assert len(await rows(served.registry, "materialization_targets")) == 3
