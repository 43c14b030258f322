"""Compare-and-swap in HTTP terms: ETag, If-Match, If-None-Match, 412 and 428 (both databases).

Races are driven by failpoints: a writer is parked after validation, another writer wins,
then the first is released and must lose with a 412 carrying the winner's ETag.
"""

from __future__ import annotations

import asyncio

from registry.domain.model import Scope
from registry.http.preconditions import entity_tag, parse_condition
from tests.http.helpers import SKILLS, form, publish
from tests.support.faults import ScriptedFailpoints
from tests.support.packages import package
from tests.support.state import db_state


async def head_etag(served, slug):
    r = await served.client.get(f"{SKILLS}/{slug}", headers=served.auth("read"))
    assert r.status_code == 200, r.text
    return r.headers["etag"]


async def test_an_update_needs_the_current_etag_and_a_stale_one_gets_412_with_the_head(served):
    assert (await publish(served, "cas", package("cas", tag="1"))).status_code == 201
    first = await head_etag(served, "cas")
    r = await publish(served, "cas", package("cas", tag="2"), headers={"If-Match": first})
    assert r.status_code == 200, r.text
    second = r.headers["etag"]
    assert second != first
    assert second == await head_etag(served, "cas")

    before = await db_state(served.registry)
    r = await publish(served, "cas", package("cas", tag="3"), headers={"If-Match": first})
    assert r.status_code == 412
    problem = r.json()
    assert r.headers["content-type"] == "application/problem+json"
    assert problem["code"] == "head_conflict"
    assert problem["current_etag"] == second
    assert problem["current_head"] == 2
    assert r.headers["etag"] == second
    assert await db_state(served.registry) == before


async def test_a_retried_update_whose_reply_was_lost_answers_200_with_its_version(served):
    """RFC 9110 13.1.1: a change already made is a success, although If-Match now fails."""
    assert (await publish(served, "retry", package("retry", tag="1"))).status_code == 201
    first = await head_etag(served, "retry")
    update = package("retry", tag="2")
    made = await publish(served, "retry", update, headers={"If-Match": first})
    assert made.status_code == 200
    # The client never saw that reply and sends the same request again.
    before = await db_state(served.registry)
    again = await publish(served, "retry", update, headers={"If-Match": first})
    assert again.status_code == 200, again.text
    body = again.json()
    assert (body["version"], body["created"], body["unchanged"]) == (2, False, True)
    assert again.headers["etag"] == made.headers["etag"]
    assert await db_state(served.registry) == before
    # Other content from the same stale tag still fails, and a tag of the head's own
    # number (another skill's, or another incarnation's) never passes for a retry.
    other = await publish(served, "retry", package("retry", tag="3"), headers={"If-Match": first})
    assert (other.status_code, other.json()["current_etag"]) == (412, made.headers["etag"])
    forged = '"2.0000000000000000"'
    r = await publish(served, "retry", package("retry", tag="4"), headers={"If-Match": forged})
    assert r.status_code == 412
    assert await db_state(served.registry) == before


async def test_a_write_without_a_precondition_is_428_and_changes_nothing(served):
    before = await db_state(served.registry)
    parts, data = form(package("bare"))
    r = await served.client.put(
        f"{SKILLS}/bare", files=parts, data=data, headers=served.auth("write")
    )
    assert r.status_code == 428
    assert r.json()["code"] == "precondition_required"
    assert await db_state(served.registry) == before


async def test_a_create_of_an_existing_skill_is_412_skill_exists(served):
    assert (await publish(served, "twice", package("twice"))).status_code == 201
    r = await publish(served, "twice", package("twice", tag="b"))
    assert r.status_code == 412
    assert r.json()["code"] == "skill_exists"
    assert r.json()["current_etag"] == await head_etag(served, "twice")


async def test_if_match_on_a_missing_skill_fails_and_star_needs_existence(served):
    r = await publish(served, "ghost", package("ghost"), headers={"If-Match": "*"})
    assert r.status_code == 412
    assert r.json()["code"] == "precondition_failed"
    assert (await publish(served, "ghost", package("ghost"))).status_code == 201
    r = await publish(served, "ghost", package("ghost", tag="2"), headers={"If-Match": "*"})
    assert r.status_code == 200
    assert r.json()["version"] == 2


async def test_weak_tags_never_match_and_a_list_may_hold_the_current_tag(served):
    assert (await publish(served, "tags", package("tags"))).status_code == 201
    tag = await head_etag(served, "tags")
    r = await publish(served, "tags", package("tags", tag="w"), headers={"If-Match": f"W/{tag}"})
    assert r.status_code == 412
    r = await publish(
        served,
        "tags",
        package("tags", tag="l"),
        headers={"If-Match": f'"9.0000000000000000", {tag}'},
    )
    assert r.status_code == 200


async def test_malformed_preconditions_are_400(served):
    r = await publish(served, "bad", package("bad"), headers={"If-Match": "not-quoted"})
    assert r.status_code == 400
    assert r.json()["code"] == "precondition_invalid"
    r = await publish(served, "bad", package("bad"), headers={"If-None-Match": '"1.abc"'})
    assert r.status_code == 400
    assert r.json()["code"] == "precondition_invalid"


async def test_resaving_the_head_is_unchanged_and_keeps_the_etag(served):
    files = package("same")
    assert (await publish(served, "same", files)).status_code == 201
    tag = await head_etag(served, "same")
    r = await publish(served, "same", files, headers={"If-Match": tag})
    assert r.status_code == 200
    assert r.json()["unchanged"] is True
    assert r.json()["version"] == 1
    assert r.headers["etag"] == tag


async def test_a_conditional_get_answers_304_until_the_head_moves(served):
    assert (await publish(served, "cached", package("cached"))).status_code == 201
    tag = await head_etag(served, "cached")
    r = await served.client.get(
        f"{SKILLS}/cached", headers={"If-None-Match": tag, **served.auth("read")}
    )
    assert r.status_code == 304
    assert (
        await publish(served, "cached", package("cached", tag="2"), headers={"If-Match": tag})
    ).status_code == 200
    r = await served.client.get(
        f"{SKILLS}/cached", headers={"If-None-Match": tag, **served.auth("read")}
    )
    assert r.status_code == 200


async def test_equal_content_at_the_same_version_in_two_skills_has_two_etags(served):
    # What keeps a deleted and re-created skill's tags apart: the skill row's id is in
    # the tag, so equal content at an equal version number still tags differently.
    files = package("twin")
    assert (await publish(served, "twin", files)).status_code == 201
    assert (await publish(served, "twin", files, workspace="globex")).status_code == 201
    mine = await head_etag(served, "twin")
    r = await served.client.get(
        "/v1/workspaces/globex/skills/twin", headers=served.auth("read", other=True)
    )
    theirs = r.headers["etag"]
    mine_info = await served.registry.package_info(Scope("acme"), "twin")
    assert r.json()["manifest_hash"] == mine_info.manifest_hash
    assert mine.startswith('"1.')
    assert theirs.startswith('"1.')
    assert mine != theirs
    assert entity_tag(1, 1, "a" * 64) != entity_tag(2, 1, "a" * 64)
    assert parse_condition(mine).matches(mine)


async def test_two_updates_from_one_etag_exactly_one_wins(serve):
    failpoints = ScriptedFailpoints()
    served = await serve(failpoints=failpoints)
    assert (await publish(served, "race", package("race"))).status_code == 201
    base = await head_etag(served, "race")

    park = failpoints.park("write.validated")
    slow = asyncio.create_task(
        publish(served, "race", package("race", tag="slow"), headers={"If-Match": base})
    )
    await park.reached.wait()
    fast = await publish(served, "race", package("race", tag="fast"), headers={"If-Match": base})
    assert fast.status_code == 200
    park.release.set()
    lost = await slow
    assert lost.status_code == 412
    assert lost.json()["code"] == "head_conflict"
    assert lost.json()["current_etag"] == fast.headers["etag"]
    assert lost.json()["details"] == {"expected": 1, "current": 2}


async def test_two_creates_of_one_slug_exactly_one_wins(serve):
    failpoints = ScriptedFailpoints()
    served = await serve(failpoints=failpoints)
    park = failpoints.park("write.validated")
    slow = asyncio.create_task(publish(served, "born", package("born", tag="slow")))
    await park.reached.wait()
    fast = await publish(served, "born", package("born", tag="fast"))
    assert fast.status_code == 201
    park.release.set()
    lost = await slow
    assert lost.status_code == 412
    assert lost.json()["code"] == "skill_exists"
    assert lost.json()["current_etag"] == fast.headers["etag"]


async def test_a_tag_past_every_bound_is_a_412_on_every_conditional_write(served):
    """A version number in a tag is bounded before `int()`: never a 500 (issue 15, item 1).

    5,000 digits (Python's `int()` refuses more than 4,300) and a digit of another script
    (`str.isdigit` accepts the superscript two, `int` does not), on every conditional write of
    a skill (the listing's publish is in tests/http/test_hostile_requests.py).
    """
    assert (await publish(served, "big", package("big", tag="1"))).status_code == 201
    tag = await head_etag(served, "big")
    r = await publish(served, "big", package("big", tag="2"), headers={"If-Match": tag})
    assert r.status_code == 200
    await served.client.post(
        f"{SKILLS}/big/state",
        json={"action": "auto_improve_off"},
        headers={"If-Match": r.headers["etag"], **served.auth("owner")},
    )
    parts, data = form(package("big", tag="learned"))
    data = {"meta": '{"origin": "learning"}'}
    learned = await served.client.put(
        f"{SKILLS}/big",
        files=parts,
        data=data,
        headers={"If-Match": await head_etag(served, "big"), **served.auth("write")},
    )
    assert learned.status_code in (200, 202), learned.text
    proposals = await served.client.get("/v1/workspaces/acme/proposals", headers=served.auth())
    proposal = proposals.json()["items"][0]["id"]

    before = await db_state(served.registry)
    wrong = []
    for name, tag_value in (
        ("huge", f'"{"9" * 5000}.0123456789abcdef"'),
        ("superscript", b'"\xb2.0"'),
    ):
        headers = {"If-Match": tag_value, **served.auth("owner")}
        parts, data = form(package("big", tag="3"))
        answers = {
            "put": await served.client.put(
                f"{SKILLS}/big", files=parts, data=data, headers=headers
            ),
            "restore": await served.client.post(
                f"{SKILLS}/big/restore", json={"version": 1}, headers=headers
            ),
            "state": await served.client.post(
                f"{SKILLS}/big/state", json={"action": "pause"}, headers=headers
            ),
            "decision": await served.client.post(
                f"/v1/workspaces/acme/proposals/{proposal}/decision",
                json={"decision": "keep_current"},
                headers=headers,
            ),
            "delete": await served.client.delete(f"{SKILLS}/big", headers=headers),
        }
        wrong += [(name, k, r.status_code) for k, r in answers.items() if r.status_code != 412]
    assert wrong == []
    assert await db_state(served.registry) == before
