"""History, diff, restore, state, delete and proposals over HTTP (both databases).

Every change is conditional on the skill's ETag, and a deleted and re-created skill's
tags never match the old one's.
"""

from __future__ import annotations

import io
import tarfile

import pytest

from registry.domain.model import Origin
from registry.errors import HeadConflict
from tests.http.helpers import BLOBS, SKILLS, digest, manifest, publish, raw
from tests.support.packages import package
from tests.support.scopes import ACME
from tests.support.state import db_state


async def etag_of(served, slug):
    r = await served.client.head(f"{SKILLS}/{slug}", headers=served.auth("read"))
    assert r.status_code == 200
    return r.headers["etag"]


def names(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return sorted(tar.getnames())


async def three_versions(served, slug):
    assert (await publish(served, slug, package(slug, tag="1"))).status_code == 201
    for tag in ("2", "3"):
        files = package(slug, tag=tag)
        files.pop("references/part-002.md", None)
        r = await publish(served, slug, files, headers={"If-Match": await etag_of(served, slug)})
        assert r.status_code == 200, r.text


async def test_history_diff_and_restore_with_if_match(served):
    await three_versions(served, "storied")
    r = await served.client.get(f"{SKILLS}/storied/history", headers=served.auth("read"))
    assert r.status_code == 200
    assert [v["number"] for v in r.json()["items"]] == [3, 2, 1]
    r = await served.client.get(
        f"{SKILLS}/storied/diff", params={"from": "1", "to": "3"}, headers=served.auth("read")
    )
    assert r.status_code == 200
    changes = {f["path"]: f["status"] for f in r.json()["files"]}
    assert changes["references/part-002.md"] == "removed"
    assert changes["SKILL.md"] == "changed"

    stale = (
        await served.client.get(f"{SKILLS}/storied/versions/2", headers=served.auth("read"))
    ).headers["etag"]
    owner = served.auth("owner")
    r = await served.client.post(
        f"{SKILLS}/storied/restore", json={"version": 1}, headers={"If-Match": stale, **owner}
    )
    assert r.status_code == 412
    assert r.json()["current_head"] == 3
    r = await served.client.post(f"{SKILLS}/storied/restore", json={"version": 1}, headers=owner)
    assert r.status_code == 428
    r = await served.client.post(
        f"{SKILLS}/storied/restore",
        json={"version": 1, "message": "back to one"},
        headers={"If-Match": await etag_of(served, "storied"), **owner},
    )
    assert r.status_code == 200, r.text
    assert r.json()["version"] == 4
    assert r.headers["etag"] == await etag_of(served, "storied")
    v1 = await served.client.get(f"{SKILLS}/storied/archive", params={"version": 1}, headers=owner)
    v4 = await served.client.get(f"{SKILLS}/storied/archive", headers=owner)
    assert names(v4.content) == names(v1.content)
    history = (await served.client.get(f"{SKILLS}/storied/history", headers=owner)).json()
    assert history["items"][0]["restored_from"] == 1


async def test_a_restore_retried_after_a_lost_reply_answers_200_unchanged(served):
    await three_versions(served, "retried")
    owner = served.auth("owner")
    tag = await etag_of(served, "retried")
    made = await served.client.post(
        f"{SKILLS}/retried/restore", json={"version": 1}, headers={"If-Match": tag, **owner}
    )
    assert (made.status_code, made.json()["version"]) == (200, 4)
    before = await db_state(served.registry)
    again = await served.client.post(
        f"{SKILLS}/retried/restore", json={"version": 1}, headers={"If-Match": tag, **owner}
    )
    assert again.status_code == 200, again.text
    assert (again.json()["version"], again.json()["unchanged"]) == (4, True)
    assert again.headers["etag"] == made.headers["etag"]
    # A restore of another version from the same stale tag still fails, and nothing moved.
    other = await served.client.post(
        f"{SKILLS}/retried/restore", json={"version": 2}, headers={"If-Match": tag, **owner}
    )
    assert (other.status_code, other.json()["current_head"]) == (412, 4)
    assert await db_state(served.registry) == before


async def test_a_write_role_may_not_restore(served):
    await three_versions(served, "guarded")
    r = await served.client.post(
        f"{SKILLS}/guarded/restore",
        json={"version": 1},
        headers={"If-Match": "*", **served.auth("write")},
    )
    assert r.status_code == 403
    assert r.json()["details"] == {"needed": "owner", "held": "write"}


async def test_delete_then_recreate_gets_tags_the_old_skill_cannot_match(served):
    files = package("phoenix")
    assert (await publish(served, "phoenix", files)).status_code == 201
    old = await etag_of(served, "phoenix")
    owner = served.auth("owner")
    r = await served.client.delete(
        f"{SKILLS}/phoenix", headers={"If-Match": '"1.0000000000000000"', **owner}
    )
    assert r.status_code == 412
    r = await served.client.delete(f"{SKILLS}/phoenix", headers={"If-Match": old, **owner})
    assert r.status_code == 200, r.text
    assert "etag" not in r.headers
    assert (await served.client.get(f"{SKILLS}/phoenix", headers=owner)).status_code == 404
    # The same content, again at version 1: a new skill, a new tag.
    assert (await publish(served, "phoenix", files)).status_code == 201
    new = await etag_of(served, "phoenix")
    assert new.startswith('"1.')
    assert new != old
    r = await publish(served, "phoenix", package("phoenix", tag="x"), headers={"If-Match": old})
    assert r.status_code == 412
    assert r.json()["current_etag"] == new
    r = await served.client.get(
        f"{SKILLS}/phoenix/history", params={"include_archived": "true"}, headers=owner
    )
    assert [(v["number"], v["archived"]) for v in r.json()["items"]] == [(1, False), (1, True)]


async def test_a_deleted_skill_is_read_and_brought_back_by_its_id(served):
    await three_versions(served, "lazarus")
    owner = served.auth("owner")
    gone = await served.client.delete(
        f"{SKILLS}/lazarus", headers={"If-Match": await etag_of(served, "lazarus"), **owner}
    )
    assert gone.status_code == 200, gone.text
    assert (await publish(served, "lazarus", package("lazarus", tag="new"))).status_code == 201
    listed = await served.client.get(
        f"{SKILLS}/lazarus/history", params={"include_archived": "true"}, headers=owner
    )
    (old_id,) = {v["skill_id"] for v in listed.json()["items"] if v["archived"]}
    last = await served.client.get(
        f"{SKILLS}/lazarus/versions/3", params={"skill_id": old_id}, headers=owner
    )
    assert (last.status_code, last.json()["archived"], last.json()["head"]) == (200, True, 3)
    r = await served.client.get(
        f"{SKILLS}/lazarus/diff", params={"from": f"~{old_id}@1", "to": "1"}, headers=owner
    )
    assert r.status_code == 200, r.text
    assert r.json()["a"]["archived_skill"] == old_id
    revive = {"version": 1, "skill_id": old_id}
    tagged = {"If-Match": last.headers["etag"], **owner}
    taken = await served.client.post(f"{SKILLS}/lazarus/restore", json=revive, headers=tagged)
    assert (taken.status_code, taken.json()["code"]) == (409, "slug_taken")
    new_tag = await etag_of(served, "lazarus")
    r = await served.client.delete(f"{SKILLS}/lazarus", headers={"If-Match": new_tag, **owner})
    assert r.status_code == 200
    stale = {"If-Match": new_tag, **owner}
    r = await served.client.post(f"{SKILLS}/lazarus/restore", json=revive, headers=stale)
    assert (r.status_code, r.json()["current_head"]) == (412, 3)
    back = await served.client.post(f"{SKILLS}/lazarus/restore", json=revive, headers=tagged)
    assert back.status_code == 200, back.text
    assert back.json()["version"] == 4
    assert back.headers["etag"] == await etag_of(served, "lazarus")
    history = (await served.client.get(f"{SKILLS}/lazarus/history", headers=owner)).json()
    newest = history["items"][0]
    assert (newest["skill_id"], newest["restored_from"], newest["archived"]) == (old_id, 1, False)


async def test_state_changes_are_conditional_and_checked_against_the_state_machine(served):
    assert (await publish(served, "stately", package("stately"))).status_code == 201
    owner = served.auth("owner")
    r = await served.client.get(f"{SKILLS}/stately/state", headers=owner)
    assert r.status_code == 200
    assert r.json()["state"] == "ready"
    tag = r.headers["etag"]
    r = await served.client.post(f"{SKILLS}/stately/state", json={"action": "pause"}, headers=owner)
    assert r.status_code == 428
    r = await served.client.post(
        f"{SKILLS}/stately/state",
        json={"action": "pause", "reason": "reviewing"},
        headers={"If-Match": tag, **owner},
    )
    assert r.status_code == 200, r.text
    assert r.json()["learning_paused"] is True
    assert r.headers["etag"] == tag  # controls do not move the head
    r = await served.client.post(
        f"{SKILLS}/stately/state", json={"action": "pause"}, headers={"If-Match": tag, **owner}
    )
    assert r.status_code == 409
    assert r.json()["code"] == "state_conflict"
    r = await served.client.post(
        f"{SKILLS}/stately/state", json={"action": "explode"}, headers={"If-Match": tag, **owner}
    )
    assert r.status_code == 422


async def test_proposals_are_listed_and_decided_with_if_match(served):
    assert (await publish(served, "learner", package("learner"))).status_code == 201
    await served.registry.pause_learning(ACME, "learner", actor="owner")
    learned = package("learner", tag="learned")
    pub = await served.registry.write_package(
        ACME, "learner", learned, expected_head=1, actor="job", origin=Origin.LEARNING
    )
    assert pub.proposal is not None
    owner = served.auth("owner")
    r = await served.client.get("/v1/workspaces/acme/proposals", headers=owner)
    assert [p["id"] for p in r.json()["items"]] == [pub.proposal]
    r = await served.client.get(f"/v1/workspaces/acme/proposals/{pub.proposal}", headers=owner)
    assert r.status_code == 200
    assert r.json()["summary"]["slug"] == "learner"
    # Its files are blobs of the workspace.
    d = digest(raw(learned["SKILL.md"]))
    assert (await served.client.get(f"{BLOBS}/{d}", headers=owner)).content == raw(
        learned["SKILL.md"]
    )
    decision = f"/v1/workspaces/acme/proposals/{pub.proposal}/decision"
    r = await served.client.post(decision, json={"decision": "apply"}, headers=owner)
    assert r.status_code == 428
    r = await served.client.post(
        decision, json={"decision": "apply"}, headers={"If-Match": '"1.0000000000000000"', **owner}
    )
    assert r.status_code == 412
    r = await served.client.post(
        decision,
        json={"decision": "apply"},
        headers={"If-Match": await etag_of(served, "learner"), **owner},
    )
    assert r.status_code == 200, r.text
    assert r.json()["publication"]["version"] == 2
    assert r.headers["etag"] == await etag_of(served, "learner")
    r = await served.client.get(
        f"/v1/workspaces/acme/proposals/{pub.proposal + 1000}", headers=owner
    )
    assert r.status_code == 404
    assert r.json()["code"] == "proposal_not_found"


async def test_a_stale_proposal_is_409_and_an_alternative_takes_uploaded_blobs(served):
    assert (await publish(served, "alt", package("alt"))).status_code == 201
    await served.registry.pause_learning(ACME, "alt", actor="owner")
    pub = await served.registry.write_package(
        ACME, "alt", package("alt", tag="l"), expected_head=1, actor="job", origin=Origin.LEARNING
    )
    owner = served.auth("owner")
    decision = f"/v1/workspaces/acme/proposals/{pub.proposal}/decision"
    edited = package("alt", tag="edited")
    for value in edited.values():
        data = raw(value)
        assert (
            await served.client.put(f"{BLOBS}/{digest(data)}", content=data, headers=owner)
        ).status_code == 201
    body = {"decision": "alternative", "files": manifest(edited)["files"]}
    r = await served.client.post(
        decision, json=body, headers={"If-Match": await etag_of(served, "alt"), **owner}
    )
    assert r.status_code == 200, r.text
    assert r.json()["publication"]["version"] == 2

    # Another proposal made on version 2; then the head moves: the proposal is stale.
    pub = await served.registry.write_package(
        ACME, "alt", package("alt", tag="l2"), expected_head=2, actor="job", origin=Origin.LEARNING
    )
    r = await publish(
        served,
        "alt",
        package("alt", tag="by hand"),
        headers={"If-Match": await etag_of(served, "alt")},
    )
    assert r.status_code == 200
    r = await served.client.post(
        f"/v1/workspaces/acme/proposals/{pub.proposal}/decision",
        json={"decision": "apply"},
        headers={"If-Match": await etag_of(served, "alt"), **owner},
    )
    assert r.status_code == 409
    assert r.json()["code"] == "proposal_stale"


async def test_controls_compare_and_swap_under_the_lock(registry):
    await registry.write_package(ACME, "cas", package("cas"), expected_head=None, actor="t")
    await registry.write_package(ACME, "cas", package("cas", tag="2"), expected_head=1, actor="t")
    with pytest.raises(HeadConflict):
        await registry.delete(ACME, "cas", actor="t", expected_head=1)
    status = await registry.delete(ACME, "cas", actor="t", expected_head=2)
    assert status.head == 2


async def test_numbers_that_do_not_fit_a_column_are_422_not_503(served):
    # Found by schemathesis on PostgreSQL: an id past 64 bits reached the database.
    assert (await publish(served, "numbers", package("numbers"))).status_code == 201
    read = served.auth("read")
    for params in ({"from": "1", "to": "p99999999999999999999"}, {"from": "9999999999", "to": "1"}):
        r = await served.client.get(f"{SKILLS}/numbers/diff", params=params, headers=read)
        assert r.status_code == 422, params
    r = await served.client.get(
        f"{SKILLS}/numbers/history", params={"before": "99999999999999999999.1"}, headers=read
    )
    assert r.status_code == 422
