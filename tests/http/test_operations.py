"""Operator endpoints: /healthz, /readyz, /v1/status, /metrics (both databases)."""

from __future__ import annotations

import re
from pathlib import Path

from blobstore import BlobStoreUnavailable
from registry.db.engine import create_engine
from registry.domain.model import Scope
from registry.services.context import Context
from registry.services.ops import health as operations
from tests.http.helpers import BLOBS, SKILLS, digest, manifest, publish
from tests.support.faults import InstrumentedStore
from tests.support.packages import package


class UnreachableStore(InstrumentedStore):
    async def check(self) -> None:
        raise BlobStoreUnavailable("the bucket is gone")


async def test_health_and_readiness(served):
    r = await served.client.get("/healthz")
    assert (r.status_code, r.json()) == (200, {"status": "ok"})
    r = await served.client.get("/readyz")
    assert (r.status_code, r.json()) == (200, {"ready": True, "database": True, "blob_store": True})


async def test_readiness_fails_when_the_blob_store_does_not_answer(serve, local_store):
    served = await serve(blobs=UnreachableStore(local_store))
    r = await served.client.get("/readyz")
    assert r.status_code == 503
    assert r.json() == {"ready": False, "database": True, "blob_store": False}
    assert "bucket" not in r.text  # reasons are logged, not shown to anonymous callers


async def test_readiness_fails_when_the_database_does_not_answer(tmp_path: Path, local_store):
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'missing' / 'dir' / 'r.db'}")
    try:
        state = await operations.readiness(Context(engine=engine, blobs=local_store))
    finally:
        await engine.dispose()
    assert not state.ready
    assert not state.database.ok
    assert state.blob_store.ok


async def test_status_is_for_admins_and_counts_uploads_and_events(served):
    assert (await served.client.get("/v1/status", headers=served.auth("owner"))).status_code == 403
    before = (await served.client.get("/v1/status", headers=served.auth("admin"))).json()
    data = b"an uploaded file\n"
    r = await served.client.put(
        f"{BLOBS}/{digest(data)}", content=data, headers=served.auth("write")
    )
    assert r.status_code == 201
    assert (await publish(served, "counted", package("counted"))).status_code == 201
    r = await served.client.get("/v1/status", headers=served.auth("admin"))
    assert r.status_code == 200
    after = r.json()
    assert after["uploads"]["active_claims"] == before["uploads"]["active_claims"] + 1
    assert after["uploads"]["pending_blobs"] == 0
    assert after["events"]["latest_id"] > (before["events"]["latest_id"] or 0)
    assert after["jobs"]["backlog"] == 0
    storage = after["storage"]
    # The uploaded blob is referenced by nothing yet (its claim keeps it): an orphan.
    assert storage["orphan_bytes"] >= len(data)
    assert storage["bytes_stored"] >= storage["bytes_referenced"] > 0
    assert storage["last_gc"] is None
    report = await served.registry.gc.collect(grace=0)
    r = await served.client.get("/v1/status", headers=served.auth("admin"))
    last = r.json()["storage"]["last_gc"]
    assert last is not None
    assert last["run_id"] == report.run_id
    # The claim still holds the uploaded blob: GC kept it.
    assert r.json()["storage"]["orphan_bytes"] >= len(data)


def metric(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split(" ")[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def test_metrics_count_requests_writes_conflicts_refusals_and_bytes(served):
    assert (await publish(served, "metered", package("metered"))).status_code == 201
    assert (await publish(served, "metered", package("metered", tag="2"))).status_code == 412
    r = await served.client.put(
        f"{SKILLS}/missing-blobs",
        json=manifest(package("missing-blobs")),
        headers={"If-None-Match": "*", **served.auth("write")},
    )
    assert r.status_code == 422
    data = b"metered bytes\n"
    await served.client.put(f"{BLOBS}/{digest(data)}", content=data, headers=served.auth("write"))
    text = (await served.client.get("/metrics")).text
    route = "/v1/workspaces/{workspace}/skills/{slug}"
    assert (
        metric(text, "skillreg_http_requests_total", method="PUT", route=route, status="201") == 1
    )
    assert (
        metric(text, "skillreg_http_request_duration_seconds_count", method="PUT", route=route) == 3
    )
    assert (
        metric(text, "skillreg_write_duration_seconds_count", operation="publish", outcome="ok")
        == 1
    )
    assert metric(text, "skillreg_conflicts_total", code="skill_exists") == 1
    assert metric(text, "skillreg_refusals_total", code="blobs_missing") == 1
    assert metric(text, "skillreg_upload_bytes_total", kind="blob") == len(data)
    assert metric(text, "skillreg_upload_bytes_total", kind="package") > 0
    # Unknown paths share one label, so a scanner cannot create a series per path.
    await served.client.get("/no/such/path/1")
    await served.client.get("/no/such/path/2")
    text = (await served.client.get("/metrics")).text
    assert metric(text, "skillreg_http_requests_total", route="unmatched", status="404") == 2


async def test_status_counts_pending_materialisations(served, tmp_path):
    admin = served.auth("admin")
    r = await served.client.get("/v1/status", headers=admin)
    assert r.json()["materialization"] == {
        "targets": 0,
        "pending": 0,
        "failed": 0,
        "oldest_pending_since": None,
    }
    assert (await publish(served, "on-disk", package("on-disk"))).status_code == 201
    await served.registry.reconcile(Scope("acme"), tmp_path / "target")
    r = await served.client.get("/v1/status", headers=admin)
    assert r.json()["materialization"]["targets"] == 1
    assert r.json()["materialization"]["pending"] == 0
    tag = (await served.client.head(f"{SKILLS}/on-disk", headers=admin)).headers["etag"]
    r = await publish(served, "on-disk", package("on-disk", tag="2"), headers={"If-Match": tag})
    assert r.status_code == 200
    r = await served.client.get("/v1/status", headers=admin)
    assert r.json()["materialization"]["pending"] == 1
    assert r.json()["materialization"]["oldest_pending_since"] is not None


async def test_status_reports_the_job_backlog(served):
    admin = served.auth("admin")
    jobs = (await served.client.get("/v1/status", headers=admin)).json()["jobs"]
    assert (jobs["backlog"], jobs["oldest_at"], jobs["failed"]) == (0, None, 0)
    await served.registry.marketplace.publish_listing("tidy", package("tidy"), actor="publisher")
    await served.registry.marketplace.enqueue_install(Scope("acme"), "tidy")
    jobs = (await served.client.get("/v1/status", headers=admin)).json()["jobs"]
    assert jobs["backlog"] == 1
    assert jobs["due"] == 1
    assert jobs["running"] == 0
    assert jobs["oldest_at"] is not None
    await served.registry.marketplace.run_jobs(drain=True)
    jobs = (await served.client.get("/v1/status", headers=admin)).json()["jobs"]
    assert jobs["backlog"] == 0


async def test_metric_labels_come_from_fixed_sets_whatever_the_request(served):
    # A method is any token a client invents: each one would be a series of its own.
    for method in ("ZZ000001Q", "ZZ000002Q"):
        assert (await served.client.request(method, "/healthz")).status_code == 405
    await served.client.request("ZZ000003Q", "/no/such/path")
    text = (await served.client.get("/metrics")).text
    assert "ZZ0" not in text
    assert (
        metric(text, "skillreg_http_requests_total", method="other", route="/healthz", status="405")
        == 2
    )
    assert metric(text, "skillreg_http_requests_total", method="other", route="unmatched") == 1
