"""The marketplace over HTTP: publish listings as archives, install and update as jobs.

Both databases. The catalog is shared: any token reads it, only the catalog workspace's
write tokens publish to it. Installs and updates answer 202 with a durable job; the tests
drain the queue with the registry's own worker (and, once, let the app's worker run it).
"""

from __future__ import annotations

import asyncio
import io
import tarfile

from registry.domain.model import Origin
from registry.settings import Settings
from tests.corpus.archives import CASES, GOOD_FILES, LISTING, good_tar_gz, good_zip, tar_of
from tests.http.conftest import WORKSPACE
from tests.marketplace.support import corpus_settings
from tests.support.faults import ScriptedFailpoints
from tests.support.scopes import ACME
from tests.support.state import db_state, store_digests

CATALOG = "/v1/catalog/listings"
JOBS = f"/v1/workspaces/{WORKSPACE}/jobs"
INSTALLS = f"/v1/workspaces/{WORKSPACE}/installs"
TABLES = ("skills", "versions", "manifests", "manifest_entries", "events", "blobs", "jobs")


async def _catalog_token(served, role: str = "write") -> dict[str, str]:
    issued = await served.registry.tokens.create("catalog", role, actor="test")
    return {"Authorization": f"Bearer {issued.token}"}


async def _publish(served, data: bytes, *, condition: dict[str, str] | None = None, **params):
    """PUT `data` as the listing's next version, with one catalog write token per server."""
    if "catalog" not in served.tokens:
        served.tokens["catalog"] = (await _catalog_token(served))["Authorization"]
    headers = {
        "Content-Type": "application/gzip",
        **(condition or {"If-None-Match": "*"}),
        "Authorization": served.tokens["catalog"],
    }
    return await served.client.put(
        f"{CATALOG}/{LISTING}", content=data, headers=headers, params=params
    )


def _v2() -> bytes:
    """The corpus listing with a changed guide."""
    files = [(p, d) for p, (d, _) in GOOD_FILES.items()]
    files = [
        (p, b"# Guide\n\nSecond edition.\n" if p == "references/guide.md" else d) for p, d in files
    ]
    return tar_of(files)


async def test_publish_read_install_and_follow_the_job(served):
    r = await _publish(served, good_tar_gz(f"{LISTING}/"), message="first")
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["version"], body["format"], body["files"], body["stripped"]) == (
        1,
        "tar.gz",
        3,
        LISTING,
    )
    assert r.headers["etag"] == body["etag"]
    assert r.headers["location"].endswith(f"{CATALOG}/{LISTING}")

    # Any workspace's token reads the catalog.
    reader = served.auth("read", other=True)
    listed = (await served.client.get(CATALOG, headers=reader)).json()
    assert [(i["listing"], i["head"], i["etag"]) for i in listed["items"]] == [
        (LISTING, 1, body["etag"])
    ]
    shown = await served.client.get(f"{CATALOG}/{LISTING}", headers=reader)
    assert shown.status_code == 200
    assert shown.headers["etag"] == body["etag"]
    manifest = shown.json()
    assert (manifest["version"], manifest["origin"], manifest["message"]) == (1, "import", "first")
    assert {f["path"]: f["executable"] for f in manifest["files"]} == {
        p: x for p, (_, x) in GOOD_FILES.items()
    }
    archive = await served.client.get(f"{CATALOG}/{LISTING}/archive", headers=reader)
    with tarfile.open(fileobj=io.BytesIO(archive.content), mode="r:gz") as tar:
        read = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert read == {f"{LISTING}/{p}": d for p, (d, _) in GOOD_FILES.items()}

    # Install: 202 with the job, which a worker then runs.
    r = await served.client.post(
        INSTALLS, json={"listing": LISTING, "key": "order-1"}, headers=served.auth("write")
    )
    assert r.status_code == 202, r.text
    queued = r.json()
    job_id = queued["job"]["id"]
    assert (queued["created"], queued["job"]["status"], queued["job"]["kind"]) == (
        True,
        "queued",
        "marketplace.install",
    )
    assert r.headers["location"].endswith(f"{JOBS}/{job_id}")
    assert await served.registry.marketplace.run_jobs(drain=True) == 1
    job = (await served.client.get(f"{JOBS}/{job_id}", headers=served.auth("read"))).json()
    assert (job["status"], job["result"]["outcome"], job["result"]["version"]) == (
        "succeeded",
        "installed",
        1,
    )
    copy = await served.client.get(
        f"/v1/workspaces/{WORKSPACE}/skills/{LISTING}", headers=served.auth("read")
    )
    assert copy.status_code == 200
    assert copy.json()["manifest_hash"] == body["manifest_hash"]

    # The same key names the same job: 200, nothing queued again.
    again = await served.client.post(
        INSTALLS, json={"listing": LISTING, "key": "order-1"}, headers=served.auth("write")
    )
    assert again.status_code == 200
    assert (again.json()["created"], again.json()["job"]["id"]) == (False, job_id)
    listed_jobs = (await served.client.get(JOBS, headers=served.auth("read"))).json()
    assert [j["id"] for j in listed_jobs["items"]] == [job_id]


async def test_an_update_job_fast_forwards_an_unedited_copy_and_proposes_for_an_edited_one(
    served,
):
    assert (await _publish(served, good_zip())).status_code == 201
    await served.registry.marketplace.install(ACME, LISTING)
    etag = (await served.client.get(f"{CATALOG}/{LISTING}", headers=served.auth("read"))).headers[
        "etag"
    ]
    assert (await _publish(served, _v2(), condition={"If-Match": etag})).status_code == 200
    update = f"/v1/workspaces/{WORKSPACE}/skills/{LISTING}/update"
    r = await served.client.post(update, json={}, headers=served.auth("write"))
    assert r.status_code == 202, r.text
    await served.registry.marketplace.run_jobs(drain=True)
    job = (await served.client.get(r.headers["location"], headers=served.auth("read"))).json()
    assert (job["status"], job["result"]["outcome"], job["result"]["listing_version"]) == (
        "succeeded",
        "fast_forward",
        2,
    )
    package = await served.registry.read_package(ACME, LISTING)
    assert package.files["references/guide.md"].data == b"# Guide\n\nSecond edition.\n"

    # An owner edit, then a third listing version: the update proposes, never overwrites.
    edited = {p: f.data for p, f in package.files.items()}
    edited["references/guide.md"] = b"# Guide\n\nThe owner's words.\n"
    await served.registry.write_package(
        ACME, LISTING, edited, expected_head=package.version, actor="owner", origin=Origin.EDIT
    )
    head = (await served.client.get(f"{CATALOG}/{LISTING}", headers=served.auth("read"))).headers
    third = [(p, d) for p, (d, _) in GOOD_FILES.items()]
    third = [(p, b"# Guide\n\nThird.\n" if p == "references/guide.md" else d) for p, d in third]
    r = await _publish(served, tar_of(third), condition={"If-Match": head["etag"]})
    assert r.status_code == 200
    r = await served.client.post(update, json={"policy": "propose"}, headers=served.auth("write"))
    assert r.status_code == 202
    await served.registry.marketplace.run_jobs(drain=True)
    job = (await served.client.get(r.headers["location"], headers=served.auth("read"))).json()
    assert job["status"] == "succeeded", job
    assert job["result"]["outcome"] == "proposed"
    after = await served.registry.read_package(ACME, LISTING)
    assert after.files["references/guide.md"].data == b"# Guide\n\nThe owner's words.\n"


async def test_publishing_needs_a_catalog_write_token_and_a_precondition(served):
    data = good_tar_gz()
    for headers in (served.auth("admin"), await _catalog_token(served, "read")):
        r = await served.client.put(
            f"{CATALOG}/{LISTING}",
            content=data,
            headers={"Content-Type": "application/gzip", "If-None-Match": "*", **headers},
        )
        assert (r.status_code, r.json()["code"]) == (403, "forbidden")
    token = await _catalog_token(served)
    r = await served.client.put(
        f"{CATALOG}/{LISTING}", content=data, headers={"Content-Type": "application/zip", **token}
    )
    assert (r.status_code, r.json()["code"]) == (428, "precondition_required")
    r = await served.client.put(
        f"{CATALOG}/{LISTING}",
        content=b"{}",
        headers={"Content-Type": "application/json", "If-None-Match": "*", **token},
    )
    assert (r.status_code, r.json()["code"]) == (415, "unsupported_media_type")
    r = await served.client.get(f"{CATALOG}/{LISTING}", headers=token)
    assert (r.status_code, r.json()["code"]) == (404, "listing_not_found")

    first = await _publish(served, data)
    assert first.status_code == 201
    stale = await _publish(served, _v2(), condition={"If-None-Match": "*"})
    assert (stale.status_code, stale.json()["code"]) == (412, "skill_exists")
    assert stale.json()["current_etag"] == first.headers["etag"]
    second = await _publish(served, _v2(), condition={"If-Match": first.headers["etag"]})
    assert second.status_code == 200
    lost = await _publish(served, data, condition={"If-Match": first.headers["etag"]})
    assert (lost.status_code, lost.json()["current_etag"]) == (412, second.headers["etag"])
    # The second upload again, as after a lost reply: already made, so 200 and unchanged.
    retry = await _publish(served, _v2(), condition={"If-Match": first.headers["etag"]})
    assert (retry.status_code, retry.json()["version"], retry.json()["unchanged"]) == (
        200,
        2,
        True,
    )


async def test_every_hostile_archive_is_refused_over_http_and_stores_nothing(serve, local_store):
    served = await serve(settings=corpus_settings())
    assert (await _publish(served, good_zip())).status_code == 201
    etag = (await served.client.get(f"{CATALOG}/{LISTING}", headers=served.auth("read"))).headers[
        "etag"
    ]
    before = await db_state(served.registry, TABLES)
    blobs = await store_digests(local_store)
    wrong = []
    for case in CASES:
        r = await _publish(served, case.build(), condition={"If-Match": etag})
        problem = r.json()
        rule = problem.get("details", {}).get("rule")
        if r.status_code != 422 or problem["code"] != case.error.code:
            wrong.append((case.id, r.status_code, problem["code"]))
        elif case.rule is not None and rule != case.rule:
            wrong.append((case.id, rule))
    assert wrong == []
    assert await db_state(served.registry, TABLES) == before
    assert await store_digests(local_store) == blobs


async def test_an_archive_over_the_limit_is_cut_off_while_it_streams(serve):
    served = await serve(settings=Settings(archive_max_bytes=64 * 1024))
    big = b"\0" * (2 * 64 * 1024 + 1)
    r = await _publish(served, big)
    assert (r.status_code, r.json()["code"]) == (413, "body_too_large")
    listed = (await served.client.get(CATALOG, headers=served.auth("read"))).json()
    assert listed["items"] == []


async def test_jobs_and_keys_belong_to_their_workspace(served):
    assert (await _publish(served, good_zip())).status_code == 201
    mine = await served.client.post(
        INSTALLS, json={"listing": LISTING, "key": "k"}, headers=served.auth("write")
    )
    theirs = await served.client.post(
        "/v1/workspaces/globex/installs",
        json={"listing": LISTING, "key": "k"},
        headers=served.auth("write", other=True),
    )
    assert (mine.status_code, theirs.status_code) == (202, 202)
    their_id = theirs.json()["job"]["id"]
    assert their_id != mine.json()["job"]["id"]
    # Asking for globex's job under acme's path, with acme's token: as absent as none.
    r = await served.client.get(f"{JOBS}/{their_id}", headers=served.auth("read"))
    assert (r.status_code, r.json()["code"]) == (404, "job_not_found")
    listed = (await served.client.get(JOBS, headers=served.auth("read"))).json()
    assert [j["id"] for j in listed["items"]] == [mine.json()["job"]["id"]]
    missing = await served.client.post(
        INSTALLS, json={"listing": "no-such-listing"}, headers=served.auth("write")
    )
    assert (missing.status_code, missing.json()["code"]) == (404, "listing_not_found")
    owned = await served.client.post(
        f"/v1/workspaces/{WORKSPACE}/skills/{LISTING}/update",
        json={},
        headers=served.auth("write"),
    )
    assert (owned.status_code, owned.json()["code"]) == (404, "skill_not_found")


async def test_the_app_runs_jobs_when_asked(serve):
    failpoints = ScriptedFailpoints()
    recorded = failpoints.park("job.recorded")  # hit once the outcome has committed
    recorded.release.set()
    served = await serve(
        settings=Settings(job_poll_interval=0.05), failpoints=failpoints, jobs=True
    )
    assert (await _publish(served, good_zip())).status_code == 201
    r = await served.client.post(INSTALLS, json={"listing": LISTING}, headers=served.auth("write"))
    assert r.status_code == 202
    async with asyncio.timeout(30):  # a hang guard: the app's own worker runs the job
        await recorded.reached.wait()
    job = (await served.client.get(r.headers["location"], headers=served.auth("read"))).json()
    assert job["status"] == "succeeded", job
    assert job["result"]["outcome"] == "installed"


async def test_the_apps_worker_outlives_a_failed_poll(make_registry, caplog):
    from registry.errors import StorageUnavailable  # noqa: PLC0415
    from registry.http.app import run_job_worker  # noqa: PLC0415

    registry = await make_registry(settings=Settings(job_poll_interval=0.01))
    stop = asyncio.Event()
    calls = []

    async def run_jobs(*, stop: asyncio.Event) -> int:
        calls.append(1)
        if len(calls) == 1:
            raise StorageUnavailable("database", "connection refused")
        stop.set()  # the second poll ran: the worker survived the first
        return 0

    registry.marketplace.run_jobs = run_jobs  # type: ignore[method-assign]
    async with asyncio.timeout(30):  # a hang guard
        await run_job_worker(registry, stop)
    assert len(calls) == 2
    assert "the job worker failed" in caplog.text
