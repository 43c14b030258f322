"""The two-phase upload: blobs by digest first, then a manifest naming them (both databases)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from registry.domain.model import Scope
from registry.domain.scanner import DefaultScanner, Finding
from tests.corpus.fakes import AWS_ACCESS_KEY_ID
from tests.http.helpers import BLOBS, SKILLS, digest, manifest, publish, raw
from tests.support.packages import package
from tests.support.state import WRITE_TABLES, blob_rows, db_state, live_claims, store_digests


async def upload(served, data: bytes, *, role="write", hold=False):
    return await served.client.put(
        f"{BLOBS}/{digest(data)}",
        content=data,
        params={"findings": "hold"} if hold else {},
        headers={"Content-Type": "application/octet-stream", **served.auth(role)},
    )


async def upload_all(served, files, *, role="write", hold=False):
    for value in files.values():
        data = raw(value)
        r = await upload(served, data, role=role, hold=hold)
        assert r.status_code == 201, r.text
        assert {k: r.json()[k] for k in ("digest", "size")} == {
            "digest": digest(data),
            "size": len(data),
        }


@pytest.mark.both_databases
async def test_head_put_head_then_publish_the_manifest(served):
    files = package("two-phase", files=3, size=300)
    c = served.client
    d = digest(raw(files["SKILL.md"]))
    assert (await c.head(f"{BLOBS}/{d}", headers=served.auth("read"))).status_code == 404
    await upload_all(served, files)
    r = await c.head(f"{BLOBS}/{d}", headers=served.auth("read"))
    assert r.status_code == 200
    assert int(r.headers["content-length"]) == len(raw(files["SKILL.md"]))

    body = manifest(files, message="two phases", sources=["chat:1"])
    r = await c.put(
        f"{SKILLS}/two-phase", json=body, headers={"If-None-Match": "*", **served.auth("write")}
    )
    assert r.status_code == 201, r.text
    assert r.json()["version"] == 1
    assert r.json()["uploaded"] == 0  # every blob was already stored and live
    assert r.headers["etag"] == r.json()["etag"]

    package_read = await served.registry.read_package(Scope("acme"), "two-phase")
    assert {p: f.data for p, f in package_read.files.items()} == {
        p: raw(v) for p, v in files.items()
    }
    assert package_read.files["scripts/run.py"].executable
    assert package_read.message == "two phases"
    assert await live_claims(served.registry) == len(files)  # the upload claims, until they expire


async def test_a_manifest_naming_blobs_not_uploaded_is_refused_with_the_missing_digests(served):
    files = package("partial", files=2)
    first = dict(list(files.items())[:1])
    await upload_all(served, first)
    before = await db_state(served.registry)
    r = await served.client.put(
        f"{SKILLS}/partial",
        json=manifest(files),
        headers={"If-None-Match": "*", **served.auth("write")},
    )
    assert r.status_code == 422, r.text
    problem = r.json()
    assert r.headers["content-type"] == "application/problem+json"
    assert problem["code"] == "blobs_missing"
    expected = sorted(digest(raw(v)) for p, v in files.items() if p not in first)
    assert problem["details"]["digests"] == expected
    assert await db_state(served.registry) == before


async def test_a_digest_that_does_not_match_its_bytes_stores_nothing(served):
    stored_before = await store_digests(served.registry.blobs)
    rows_before = await blob_rows(served.registry)
    wrong = digest(b"something else")
    r = await served.client.put(
        f"{BLOBS}/{wrong}", content=b"these bytes", headers=served.auth("write")
    )
    assert r.status_code == 422
    assert r.json()["code"] == "digest_mismatch"
    assert r.json()["details"] == {"expected": wrong, "actual": digest(b"these bytes")}
    assert await store_digests(served.registry.blobs) == stored_before
    assert await blob_rows(served.registry) == rows_before
    assert await live_claims(served.registry) == 0


async def test_declared_sizes_must_match_the_blobs(served):
    files = {"SKILL.md": package("sized")["SKILL.md"]}
    await upload_all(served, files)
    body = manifest(files)
    body["files"][0]["size"] += 1
    r = await served.client.put(
        f"{SKILLS}/sized", json=body, headers={"If-None-Match": "*", **served.auth("write")}
    )
    assert r.status_code == 422
    assert r.json()["code"] == "manifest_invalid"
    assert r.json()["details"]["rule"] == "size_mismatch"


async def test_uploaded_content_is_validated_and_scanned_like_any_write(served):
    # SKILL.md whose frontmatter names another skill, and a file holding a credential.
    files = {"SKILL.md": package("wrong-name")["SKILL.md"]}
    await upload_all(served, files)
    r = await served.client.put(
        f"{SKILLS}/right-name",
        json=manifest(files),
        headers={"If-None-Match": "*", **served.auth("write")},
    )
    assert r.status_code == 422
    assert r.json()["code"] == "frontmatter_invalid"

    secret = {
        "SKILL.md": package("leaky")["SKILL.md"],
        "config.env": f"id={AWS_ACCESS_KEY_ID}\n".encode(),
    }
    await upload_all(served, secret, hold=True)
    r = await served.client.put(
        f"{SKILLS}/leaky",
        json=manifest(secret),
        headers={"If-None-Match": "*", **served.auth("write")},
    )
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "content_blocked"
    assert r.json()["details"]["path"] == "config.env"
    assert AWS_ACCESS_KEY_ID not in r.text


async def test_another_workspace_cannot_see_or_name_an_uploaded_blob(served):
    files = package("mine", files=1)
    await upload_all(served, files)
    d = digest(raw(files["SKILL.md"]))
    other_blobs = "/v1/workspaces/globex/blobs"
    # globex's own token, on its own workspace: the digest is not globex's.
    r = await served.client.head(f"{other_blobs}/{d}", headers=served.auth("admin", other=True))
    assert r.status_code == 404
    r = await served.client.get(f"{other_blobs}/{d}", headers=served.auth("admin", other=True))
    assert r.status_code == 404
    assert r.json()["code"] == "blob_not_found"
    r = await served.client.put(
        "/v1/workspaces/globex/skills/mine",
        json=manifest(files),
        headers={"If-None-Match": "*", **served.auth("write", other=True)},
    )
    assert r.status_code == 422
    assert r.json()["code"] == "blobs_missing"
    # After uploading the bytes itself, it may.
    r = await served.client.put(
        f"{other_blobs}/{d}",
        content=raw(files["SKILL.md"]),
        headers=served.auth("write", other=True),
    )
    assert r.status_code == 201


async def test_blobs_of_published_versions_are_readable_by_digest(served):
    files = package("readable", files=2)
    r = await publish(served, "readable", files)
    assert r.status_code == 201
    for value in files.values():
        data = raw(value)
        r = await served.client.get(f"{BLOBS}/{digest(data)}", headers=served.auth("read"))
        assert r.status_code == 200
        assert r.content == data
        assert r.headers["etag"] == f'"{digest(data)}"'
        again = await served.client.get(
            f"{BLOBS}/{digest(data)}",
            headers={"If-None-Match": r.headers["etag"], **served.auth("read")},
        )
        assert again.status_code == 304


async def test_uploading_the_same_blob_twice_is_idempotent(served):
    data = b"the same bytes\n"
    for _ in range(2):
        r = await served.client.put(
            f"{BLOBS}/{digest(data)}", content=data, headers=served.auth("write")
        )
        assert r.status_code == 201
    assert (await blob_rows(served.registry))[digest(data)] == "live"


async def test_a_second_manifest_reuses_the_first_versions_blobs_without_uploading(served):
    files = package("reuse", files=2)
    assert (await publish(served, "reuse", files)).status_code == 201
    head = await served.client.get(f"{SKILLS}/reuse", headers=served.auth("read"))
    changed = dict(files)
    changed["notes.md"] = b"a new file\n"
    await upload_all(served, {"notes.md": changed["notes.md"]})
    r = await served.client.put(
        f"{SKILLS}/reuse",
        json=manifest(changed),
        headers={"If-Match": head.headers["etag"], **served.auth("write")},
    )
    assert r.status_code == 200, r.text
    assert r.json()["version"] == 2
    assert r.json()["retired"] == 1


class SteppedClock:
    # Starts at the wall clock: GC also compares the store's own object times with it.
    def __init__(self) -> None:
        self.current = datetime.now(UTC)

    def now(self) -> datetime:
        return self.current


async def test_gc_keeps_an_upload_while_its_claim_lasts_and_reclaims_it_after(serve):
    clock = SteppedClock()
    served = await serve(clock=clock)
    kept, dropped = package("kept", files=1), {"orphan.bin": b"never named by a manifest\n"}
    await upload_all(served, kept)
    await upload_all(served, dropped)
    orphan = digest(dropped["orphan.bin"])
    await served.registry.gc.collect(grace=0)
    assert orphan in await store_digests(served.registry.blobs)  # its claim holds it
    r = await served.client.put(
        f"{SKILLS}/kept",
        json=manifest(kept),
        headers={"If-None-Match": "*", **served.auth("write")},
    )
    assert r.status_code == 201, r.text

    settings = served.registry.settings
    clock.current += timedelta(seconds=settings.claim_ttl + settings.gc_clock_skew + 1)
    await served.registry.gc.collect(grace=0)
    stored = await store_digests(served.registry.blobs)
    assert orphan not in stored  # claim expired, nothing names it: reclaimed
    assert all(digest(raw(v)) in stored for v in kept.values())  # named by a version: kept
    r = await served.client.head(f"{BLOBS}/{orphan}", headers=served.auth("read"))
    assert r.status_code == 404


async def test_a_blob_holding_a_credential_is_refused_at_upload_and_never_stored(served):
    """Issue 15, item 6: the content check runs when the bytes arrive, not at the publish."""
    data = f"export AWS_ACCESS_KEY_ID={AWS_ACCESS_KEY_ID}\n".encode()
    before = await db_state(served.registry, WRITE_TABLES)
    r = await upload(served, data)
    assert r.status_code == 422, r.text
    problem = r.json()
    assert problem["code"] == "content_blocked"
    first = {"path": digest(data), "pattern_class": "aws_access_key_id", "ordinal": 1}
    # Every blocking finding is listed too (issue 17: an owner approves them all at once).
    assert {k: problem["details"][k] for k in first} == first
    assert [{k: f[k] for k in first} for f in problem["details"]["findings"]] == [first]
    assert AWS_ACCESS_KEY_ID not in r.text
    assert await db_state(served.registry, WRITE_TABLES) == before
    assert digest(data) not in await store_digests(served.registry.ctx.blobs)
    head = await served.client.head(f"{BLOBS}/{digest(data)}", headers=served.auth("read"))
    assert head.status_code == 404


async def test_a_held_blob_is_unreadable_until_a_publish_that_approves_it_commits(served):
    secret = f"id={AWS_ACCESS_KEY_ID}\n".encode()
    files = {"SKILL.md": package("held")["SKILL.md"], "config.env": secret}
    await upload_all(served, {"SKILL.md": files["SKILL.md"]})
    r = await upload(served, secret, hold=True)
    assert r.status_code == 201, r.text
    assert r.json()["held"] is True
    assert r.json()["findings"] == [{"pattern_class": "aws_access_key_id", "ordinal": 1, "line": 1}]
    blob = f"{BLOBS}/{digest(secret)}"
    for method in ("HEAD", "GET"):
        read = await served.client.request(method, blob, headers=served.auth("read"))
        assert read.status_code == 404, method
    # A publish that names it without approving its finding is refused, like any write.
    put = {"If-None-Match": "*", **served.auth("write")}
    refused = await served.client.put(f"{SKILLS}/held", json=manifest(files), headers=put)
    assert refused.status_code == 422, refused.text
    assert refused.json()["details"]["path"] == "config.env"
    assert (await served.client.get(blob, headers=served.auth("read"))).status_code == 404
    # Approved by the path and ordinal it is reported at, it is published, then readable.
    # An exception to the content check is the owner's to grant (issue 17): a write token
    # that approves is refused; the owner's approval publishes it.
    body = manifest(files, approve=[{"path": "config.env", "ordinal": 1}])
    denied = await served.client.put(f"{SKILLS}/held", json=body, headers=put)
    assert denied.status_code == 403, denied.text
    as_owner = {"If-None-Match": "*", **served.auth("owner")}
    published = await served.client.put(f"{SKILLS}/held", json=body, headers=as_owner)
    assert published.status_code == 201, published.text
    read = await served.client.get(blob, headers=served.auth("read"))
    assert (read.status_code, read.content) == (200, secret)


class CountingScanner(DefaultScanner):
    def __init__(self) -> None:
        self.scanned: list[str] = []

    def scan(self, path: str, data: bytes) -> list[Finding]:
        self.scanned.append(path)
        return super().scan(path, data)


async def test_a_clean_upload_is_scanned_once(serve):
    scanner = CountingScanner()
    served = await serve(scanner=scanner)
    files = package("once", files=1)
    await upload_all(served, files)
    assert sorted(scanner.scanned) == sorted(digest(raw(v)) for v in files.values())
    r = await served.client.put(
        f"{SKILLS}/once",
        json=manifest(files),
        headers={"If-None-Match": "*", **served.auth("write")},
    )
    assert r.status_code == 201, r.text
    # The publish scanned its metadata only: the files were found clean at upload.
    assert all(p.startswith("meta:") for p in scanner.scanned[len(files) :])
