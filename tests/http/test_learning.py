"""The learning rules over HTTP (both databases): the same rules as the library's."""

from __future__ import annotations

import json

from registry.settings import Settings
from tests.http.helpers import SKILLS, form, manifest
from tests.support.history import github_token
from tests.support.learning import learn, learned, learned_md, prose
from tests.support.packages import SLUG, package
from tests.support.scopes import ACME

W = f"/v1/workspaces/{ACME.workspace}"


async def put(served, slug, files, *, create=False, role="owner", **meta):
    """PUT a multipart package with `meta` options, conditional on the current head."""
    headers = served.auth(role)
    if create:
        headers["If-None-Match"] = "*"
    else:
        head = await served.client.head(f"{SKILLS}/{slug}", headers=served.auth("read"))
        headers["If-Match"] = head.headers["etag"]
    parts, data = form(files)
    data = {"meta": json.dumps({**json.loads(data["meta"]), **meta})}
    return await served.client.put(f"{SKILLS}/{slug}", files=parts, data=data, headers=headers)


async def state(served, slug):
    return (await served.client.get(f"{SKILLS}/{slug}/state", headers=served.auth("read"))).json()


async def test_an_http_edit_turns_automatic_improvements_off_unless_kept(served):
    assert (await put(served, SLUG, learned(text="1"), create=True)).status_code == 201
    kept = await put(served, SLUG, learned(text="2"), keep_auto_improve=True)
    assert kept.status_code == 200
    assert (await state(served, SLUG))["auto_improve"]
    assert (await put(served, SLUG, learned(text="3"), origin="learning")).status_code == 200
    assert (await put(served, SLUG, learned(text="4"))).status_code == 200
    assert not (await state(served, SLUG))["auto_improve"]
    proposed = await put(served, SLUG, learned(text="5"), origin="learning")
    body = proposed.json()
    assert (proposed.status_code, body["proposal_kind"], body["version"]) == (202, "learning", 4)
    assert proposed.headers["etag"] == body["etag"]


async def test_an_imported_skill_needs_the_owners_decision(served):
    await put(served, SLUG, learned(text="1"), create=True, origin="import")
    proposed = await put(served, SLUG, learned(text="2"), origin="learning")
    assert (proposed.status_code, proposed.json()["proposal_kind"]) == (202, "learning")


async def test_a_learned_skill_without_steps_is_422(served):
    refused = await put(
        served, SLUG, {"SKILL.md": learned_md(sections="")}, create=True, origin="learning"
    )
    assert (refused.status_code, refused.json()["code"]) == (422, "learning_incomplete")


async def test_suppressions_decisions_and_a_deleted_skills_return(served):
    v1 = learned(text=prose(1))
    v2 = learned(text=prose(1) + " " + prose(2, 20), script=b"2\n")
    await put(served, SLUG, v1, create=True, keep_auto_improve=True)
    await put(served, SLUG, v2, origin="learning")
    head = await served.client.head(f"{SKILLS}/{SLUG}", headers=served.auth("read"))
    restored = await served.client.post(
        f"{SKILLS}/{SLUG}/restore",
        json={"version": 1},
        headers={**served.auth("owner"), "If-Match": head.headers["etag"]},
    )
    assert restored.status_code == 200
    listed = (await served.client.get(f"{W}/suppressions", headers=served.auth("read"))).json()
    (suppression,) = listed["items"]
    again = (await put(served, SLUG, v2, origin="learning")).json()
    assert again["proposal_kind"] == "suppressed"
    decisions = await served.client.get(
        f"{W}/decisions", params={"kind": "suppressed"}, headers=served.auth("read")
    )
    assert [d["id"] for d in decisions.json()["items"]] == [again["proposal"]]
    lift = await served.client.delete(
        f"{W}/suppressions/{suppression['id']}", headers=served.auth("owner")
    )
    assert (lift.status_code, lift.json()["status"]) == (200, "lifted")
    lifted_again = await served.client.delete(
        f"{W}/suppressions/{suppression['id']}", headers=served.auth("owner")
    )
    assert lifted_again.status_code == 409
    head = await served.client.head(f"{SKILLS}/{SLUG}", headers=served.auth("read"))
    deleted = await served.client.delete(
        f"{SKILLS}/{SLUG}", headers={**served.auth("owner"), "If-Match": head.headers["etag"]}
    )
    assert deleted.status_code == 200
    back = await put(served, SLUG, v1, create=True, origin="learning")
    body = back.json()
    assert (back.status_code, body["proposal_kind"], body["version"], body["etag"]) == (
        202,
        "suppressed",
        0,
        None,
    )
    batch = await served.client.post(
        f"{W}/decisions",
        json={
            "decisions": [
                {"proposal": body["proposal"], "decision": "apply"},
                {"proposal": again["proposal"], "decision": "apply"},
            ]
        },
        headers=served.auth("owner"),
    )
    outcomes = batch.json()["outcomes"]
    assert [(o["ok"], (o["error"] or {}).get("code")) for o in outcomes] == [
        (True, None),
        (False, "state_conflict"),  # its skill was deleted: the proposal was withdrawn
    ]
    assert (await served.client.get(f"{SKILLS}/{SLUG}", headers=served.auth("read"))).json()[
        "version"
    ] == 1


async def suppressed_on_a_deleted_skill(served, slug):
    """A `suppressed` proposal of a learning write that brings a deleted skill back."""
    files = learned(slug, text=prose(1))
    await served.registry.write_package(ACME, slug, files, expected_head=None, actor="owner")
    await served.registry.delete(ACME, slug, actor="owner")
    pub = await learn(served.registry, files, slug=slug)
    assert (pub.proposal_kind, pub.version) == ("suppressed", 0)
    return pub.proposal


async def test_a_deleted_skills_proposal_is_decided_without_its_etag(served):
    # A deleted skill has no ETag: applying its proposal creates the skill (If-None-Match:
    # *), keeping it out needs no precondition. Both used to be 428 or 412, always.
    decide = lambda proposal, decision, **headers: served.client.post(  # noqa: E731
        f"{W}/proposals/{proposal}/decision",
        json={"decision": decision},
        headers={**served.auth("owner"), **headers},
    )
    applied = await suppressed_on_a_deleted_skill(served, "gone-apply")
    for headers, status, code in [
        ({}, 428, "precondition_required"),
        ({"If-Match": "*"}, 412, "precondition_failed"),
        ({"If-None-Match": '"1.0000000000000000"'}, 400, "precondition_invalid"),
    ]:
        r = await decide(applied, "apply", **headers)
        assert (r.status_code, r.json()["code"]) == (status, code)
    r = await decide(applied, "apply", **{"If-None-Match": "*"})
    assert r.status_code == 200, r.text
    assert (r.json()["status"], r.json()["publication"]["version"]) == ("applied", 1)
    head = await served.client.head(f"{SKILLS}/gone-apply", headers=served.auth("read"))
    assert r.headers["etag"] == head.headers["etag"]

    kept = await suppressed_on_a_deleted_skill(served, "gone-keep")
    r = await decide(kept, "keep_current")
    assert (r.status_code, r.json()["status"], r.headers.get("etag")) == (200, "rejected", None)

    # The slug taken again by a new skill: a create does not hold, nor does If-Match.
    taken = await suppressed_on_a_deleted_skill(served, "gone-taken")
    assert (await put(served, "gone-taken", learned("gone-taken"), create=True)).status_code == 201
    head = await served.client.head(f"{SKILLS}/gone-taken", headers=served.auth("read"))
    for decision in ("apply", "keep_current"):
        r = await decide(taken, decision, **{"If-None-Match": "*"})
        assert (r.status_code, r.json()["code"]) == (412, "skill_exists")
        assert r.headers["etag"] == head.headers["etag"]
    r = await decide(taken, "apply", **{"If-Match": head.headers["etag"]})
    assert (r.status_code, r.json()["code"]) == (412, "skill_exists")
    r = await decide(taken, "keep_current")
    assert (r.status_code, r.json()["status"]) == (200, "rejected")
    after = await served.client.head(f"{SKILLS}/gone-taken", headers=served.auth("read"))
    assert after.headers["etag"] == head.headers["etag"]


async def test_pending_writes_over_http(serve):
    served = await serve(settings=Settings(capacity_saved=1))
    await put(served, "kept", package("kept"), create=True)
    waiting = await put(served, "first", learned("first"), create=True, origin="learning")
    body = waiting.json()
    assert (waiting.status_code, body["version"], body["etag"]) == (202, 0, None)
    assert body["pending"] is not None
    listed = await served.client.get(f"{W}/pending-writes", headers=served.auth("read"))
    assert [w["id"] for w in listed.json()["items"]] == [body["pending"]]
    none = await served.client.post(f"{W}/pending-writes/apply", headers=served.auth("owner"))
    assert none.json()["items"] == []
    status = (await served.client.get(f"{W}/learning", headers=served.auth("read"))).json()
    assert status["pending_writes"] == 1
    dropped = await served.client.delete(
        f"{W}/pending-writes/{body['pending']}", headers=served.auth("owner")
    )
    assert (dropped.status_code, dropped.json()["status"]) == (200, "dropped")
    again = await served.client.delete(
        f"{W}/pending-writes/{body['pending']}", headers=served.auth("owner")
    )
    assert again.status_code == 409
    missing = await served.client.delete(f"{W}/pending-writes/999", headers=served.auth("owner"))
    assert (missing.status_code, missing.json()["code"]) == (404, "pending_write_not_found")


async def test_triggers_and_unicode_slugs_over_http(served):
    md = (
        "---\nname: café-notes\ndescription: Notes.\nmetadata:\n  triggers: |\n"
        "    take notes\n---\n\nbody\n"
    ).encode()
    created = await put(served, "café-notes", {"SKILL.md": md}, create=True)
    assert created.status_code == 201, created.text
    got = await served.client.get(f"{SKILLS}/café-notes", headers=served.auth("read"))
    assert got.json()["triggers"] == ["take notes"]
    listed = await served.client.get(SKILLS, headers=served.auth("read"))
    assert listed.json()["items"][0]["triggers"] == ["take notes"]
    assert (await state(served, "café-notes"))["triggers"] == ["take notes"]
    refused = await put(
        served,
        SLUG,
        {"SKILL.md": b"---\nname: pdf-report\ndescription: d\ntriggers: x\n---\n"},
        create=True,
    )
    assert refused.status_code == 422
    assert "metadata" in refused.json()["detail"]
    bad = await served.client.get(f"{SKILLS}/Caf%C3%A9", headers=served.auth("read"))
    assert (bad.status_code, bad.json()["code"]) == (400, "invalid_name")


async def test_a_refused_write_lists_its_findings_and_an_owner_approves_them(served):
    secret = github_token("http")
    files = {**learned(text="1"), "references/setup.md": f"token = {secret}\n".encode()}
    refused = await put(served, SLUG, files, create=True)
    assert refused.status_code == 422
    (finding,) = refused.json()["details"]["findings"]
    assert (finding["path"], finding["ordinal"]) == ("references/setup.md", 1)
    assert secret not in refused.text
    approve = [{"path": "references/setup.md", "ordinal": 1}]
    writer = await put(served, SLUG, files, create=True, role="write", approve=approve)
    assert (writer.status_code, writer.json()["code"]) == (403, "forbidden")
    owner = await put(served, SLUG, files, create=True, approve=approve)
    assert owner.status_code == 201, owner.text
    # The JSON manifest route takes the same options.
    body = manifest(files, approve=approve, keep_auto_improve=True)
    head = await served.client.head(f"{SKILLS}/{SLUG}", headers=served.auth("read"))
    same = await served.client.put(
        f"{SKILLS}/{SLUG}",
        json=body,
        headers={**served.auth("owner"), "If-Match": head.headers["etag"]},
    )
    assert same.status_code == 200, same.text


async def test_learning_status_and_loads_over_http(served):
    await put(served, SLUG, learned(text="1"), create=True)
    await put(served, SLUG, learned(text="2"), origin="learning")
    status = await served.client.get("/v1/status", headers=served.auth("admin"))
    learning = status.json()["learning"]
    assert (learning["workspace"], learning["last_learned"]["version"]) == ("acme", 2)
    load = await served.client.post(
        f"{SKILLS}/{SLUG}/loads",
        json={"version": 1, "conversation": "conv-9"},
        headers=served.auth("write"),
    )
    assert (load.status_code, load.json()["created"]) == (200, True)
    loads = await served.client.get(
        f"{W}/loads", params={"conversation": "conv-9"}, headers=served.auth("read")
    )
    assert [(i["slug"], i["version"]) for i in loads.json()["items"]] == [(SLUG, 1)]
    pinned = await served.client.get(f"{SKILLS}/{SLUG}/versions/1", headers=served.auth("read"))
    assert pinned.json()["version"] == 1


async def test_a_batch_decision_refuses_a_credential_as_its_actor(served):
    v1 = learned(text=prose(1))
    v2 = learned(text=prose(1) + " " + prose(2, 20), script=b"2\n")
    await put(served, SLUG, v1, create=True)
    # A person's edit turns automatic improvements off: the learning write is a proposal.
    await put(served, SLUG, learned(text=prose(3)))
    proposed = (await put(served, SLUG, v2, origin="learning")).json()
    assert proposed["proposal_kind"] is not None, proposed
    actor = "AKIAQWERTYUIOPASDFGH"  # shaped like an AWS access key id
    batch = await served.client.post(
        f"{W}/decisions",
        json={
            "decisions": [{"proposal": proposed["proposal"], "decision": "apply"}],
            "actor": actor,
        },
        headers=served.auth("owner"),
    )
    assert (batch.status_code, batch.json()["code"]) == (422, "content_blocked"), batch.text
    assert batch.json()["details"]["path"] == "meta:actor"
    assert actor not in batch.text
    # Nothing was decided: the proposal is still open, the head unchanged.
    open_ = await served.client.get(f"{W}/decisions", headers=served.auth("read"))
    assert [d["id"] for d in open_.json()["items"]] == [proposed["proposal"]]
    assert (await state(served, SLUG))["head"] == 2
