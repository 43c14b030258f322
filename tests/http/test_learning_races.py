"""A learning write racing an owner's edit, restore, delete or pause: the owner wins.

The learning write reads the head and passes its early checks, then parks at the
`write.checked` failpoint (no transaction open); the owner acts, through the library, the
command line (in a thread, with a registry of its own) or HTTP; then the learning write
goes on. It must become a proposal (or a refusal), never a version over the owner's
change. Both databases.
"""

from __future__ import annotations

import asyncio

import pytest

from registry.domain.model import as_package_file
from registry.errors import HeadConflict, SkillNotFound
from registry.services.materialize.folder import write_folder
from registry.settings import Settings
from tests.http.helpers import form
from tests.support.cli import database_options, run_json
from tests.support.faults import ScriptedFailpoints
from tests.support.learning import learn, learned, prose
from tests.support.packages import SLUG, package
from tests.support.scopes import ACME

# Races: what they prove depends on how each database locks and isolates.
pytestmark = pytest.mark.both_databases

ACTIONS = ("edit", "restore", "delete", "pause")


def _versions(slug: str = SLUG) -> dict[str, dict]:
    """v1, v2 (learned), what the learning job sends while the owner acts, the owner's edit."""
    return {
        "v1": learned(slug, text=prose(1)),
        "v2": learned(slug, text=prose(1) + " " + prose(2, 20), script=b"print(2)\n"),
        # v2 again, one word on.
        "next": learned(slug, text=prose(1) + " " + prose(2, 20) + " again", script=b"print(2)\n"),
        "edited": learned(slug, text=prose(5), script=b"print('owner')\n"),
    }


V = _versions()


async def _setup(registry, slug: str = SLUG):
    files = _versions(slug)
    await registry.write_package(
        ACME, slug, files["v1"], expected_head=None, actor="u", keep_auto_improve=True
    )
    assert (await learn(registry, files["v2"], slug=slug)).version == 2


async def _owner_by_library(registry, action, slug, _ctx):
    if action == "edit":
        await registry.edit(ACME, slug, _versions(slug)["edited"], base_version=2, actor="owner")
    elif action == "restore":
        await registry.restore(ACME, slug, 1, expected_head=2, actor="owner")
    elif action == "delete":
        await registry.delete(ACME, slug, actor="owner")
    else:
        await registry.pause_learning(ACME, slug, actor="owner")


async def _owner_by_cli(_registry, action, slug, ctx):
    base, tmp = ctx["base"], ctx["tmp"]
    ref = f"{ACME.workspace}/{slug}"
    if action == "edit":
        folder = tmp / slug
        edited = _versions(slug)["edited"]
        files = {path: as_package_file(value) for path, value in edited.items()}
        await asyncio.to_thread(write_folder, folder, files)
        args = ["publish", folder, "-w", ACME.workspace, "--expect-head", 2]
    elif action == "restore":
        args = ["restore", ref, 1, "--expect-head", 2]
    elif action == "delete":
        args = ["delete", ref, "--yes"]
    else:
        args = [action, ref]
    await asyncio.to_thread(run_json, *base, *args)


async def _owner_by_http(_registry, action, slug, ctx):
    served = ctx["served"]
    url = f"/v1/workspaces/{ACME.workspace}/skills/{slug}"
    owner = served.auth("owner")
    tag = (await served.client.get(url, headers=owner)).headers["ETag"]
    headers = {**owner, "If-Match": tag}
    if action == "edit":
        parts, data = form(_versions(slug)["edited"])
        response = await served.client.put(url, files=parts, data=data, headers=headers)
    elif action == "restore":
        response = await served.client.post(f"{url}/restore", json={"version": 1}, headers=headers)
    elif action == "delete":
        response = await served.client.delete(url, headers=headers)
    else:
        response = await served.client.post(
            f"{url}/state", json={"action": "pause"}, headers=headers
        )
    assert response.status_code < 300, (action, response.text)


OWNERS = {"library": _owner_by_library, "cli": _owner_by_cli, "http": _owner_by_http}


async def test_the_owner_wins_a_race_with_a_learning_write(
    make_registry, serve, database_url, local_store, tmp_path
):
    """Every entry point and action, in turn, each on a skill of its own in one registry
    (one server): the races are sequential, so they cannot disturb one another."""
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints)
    ctx = {
        "base": database_options(database_url, local_store.root),
        "tmp": tmp_path,
        "served": await serve(registry),
    }
    for entry in sorted(OWNERS):
        for action in ACTIONS:
            case = f"{action} by {entry}"
            slug = f"{action}-by-{entry}"
            await _setup(registry, slug)
            park = failpoints.park("write.checked")
            learning = asyncio.create_task(learn(registry, _versions(slug)["next"], slug=slug))
            await park.reached.wait()
            await OWNERS[entry](registry, action, slug, ctx)
            park.release.set()
            pub = await learning
            assert pub.proposal is not None, (case, pub)
            assert not pub.created, case
            expected_kind = {"edit": "learning", "pause": "learning"}.get(action, "suppressed")
            assert pub.proposal_kind == expected_kind, case
            if action == "delete":
                with pytest.raises(SkillNotFound):
                    await registry.read_package(ACME, slug)
                continue
            head = await registry.package_info(ACME, slug)
            assert head.version == (2 if action == "pause" else 3), case
            origin = {"edit": "edit", "restore": "restore", "pause": "learning"}[action]
            assert head.origin == origin, case


async def test_a_learning_write_naming_the_old_head_is_refused_after_an_owner_edit(
    make_registry,
):
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints)
    await _setup(registry)
    park = failpoints.park("write.checked")
    learning = asyncio.create_task(learn(registry, V["next"], expected=2))
    await park.reached.wait()
    await registry.edit(ACME, SLUG, V["edited"], base_version=2, actor="owner")
    park.release.set()
    with pytest.raises(HeadConflict):
        await learning
    assert (await registry.package_info(ACME, SLUG)).origin == "edit"


async def test_a_save_taking_the_last_slot_makes_the_learning_write_wait(make_registry):
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints, settings=Settings(capacity_saved=2))
    await registry.write_package(ACME, "kept", package("kept"), expected_head=None, actor="u")
    park = failpoints.park("write.checked")
    learning = asyncio.create_task(learn(registry, learned("new"), slug="new", expected=None))
    await park.reached.wait()
    await registry.write_package(ACME, "saved", package("saved"), expected_head=None, actor="u")
    park.release.set()
    pub = await learning
    assert (pub.pending is not None, pub.created) == (True, False)
    with pytest.raises(SkillNotFound):
        await registry.read_package(ACME, "new")
    await registry.delete(ACME, "saved", actor="owner")
    assert (await registry.read_package(ACME, "new")).version == 1
