"""The ClawHub-compatible API's rules, request by request (the real client: test_clawhub_client.py).

Access per `SKILLREG_CLAWHUB` (off: 404; public: no token; private: a token of any
workspace), the version mapping (N is `"N.0.0"`, nothing else names it), the download
(the same zip bytes every time, with their SHA-256), resolve by the client's fingerprint,
and the publish path: only a `write` token of the catalog workspace, every file verified
against its announced SHA-256 and content-checked before it is stored, a version that is
not newer refused, the head compare-and-swapped.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import zipfile

import pytest

from registry.domain import clawhub
from registry.domain.model import PackageFile
from registry.settings import Settings
from tests.corpus.fakes import private_key_block
from tests.support.packages import skill_md

API = "/clawhub/api/v1"
FILES = {
    "SKILL.md": skill_md("pdf-report", "Builds PDF reports."),
    "scripts/run.py": b"print('v1')\n",
}


async def _listing(served, files=FILES, slug="pdf-report"):
    package = {path: PackageFile(data) for path, data in files.items()}
    return await served.registry.marketplace.publish_listing(
        slug, package, actor="publisher", message="m"
    )


@pytest.fixture
async def public(serve):
    served = await serve(settings=Settings(clawhub="public"))
    await _listing(served)
    issued = await served.registry.tokens.create("catalog", "write", actor="test")
    served.tokens["catalog"] = issued.token
    issued = await served.registry.tokens.create("catalog", "read", actor="test")
    served.tokens["catalog-read"] = issued.token
    return served


async def test_off_serves_nothing(serve):
    served = await serve()
    await _listing(served)
    for path in ("/skills", "/skills/pdf-report", "/whoami", "/download?slug=pdf-report"):
        response = await served.client.get(API + path, headers=served.auth("read"))
        assert response.status_code == 404, path


async def test_private_needs_a_token_of_any_workspace(serve):
    served = await serve(settings=Settings(clawhub="private"))
    await _listing(served)
    assert (await served.client.get(f"{API}/skills/pdf-report")).status_code == 401
    for auth in (served.auth("read"), served.auth("read", other=True)):
        response = await served.client.get(f"{API}/skills/pdf-report", headers=auth)
        assert response.status_code == 200


async def test_detail_versions_and_files(public):
    detail = (await public.client.get(f"{API}/skills/pdf-report")).json()
    assert detail["latestVersion"]["version"] == "1.0.0"
    assert detail["skill"]["summary"] == "Builds PDF reports."
    assert detail["owner"]["handle"] == "catalog"
    assert detail["moderation"]["isMalwareBlocked"] is False
    version = (await public.client.get(f"{API}/skills/pdf-report/versions/1.0.0")).json()
    files = {f["path"]: f for f in version["version"]["files"]}
    assert files["scripts/run.py"]["sha256"] == hashlib.sha256(FILES["scripts/run.py"]).hexdigest()
    assert files["scripts/run.py"]["size"] == len(FILES["scripts/run.py"])
    for missing in ("1.0.1", "2.0.0", "v1", "01.0.0"):
        response = await public.client.get(f"{API}/skills/pdf-report/versions/{missing}")
        assert response.status_code == 404, missing
    other_owner = await public.client.get(f"{API}/skills/pdf-report?ownerHandle=acme")
    assert other_owner.status_code == 404
    file = await public.client.get(
        f"{API}/skills/pdf-report/file", params={"path": "scripts/run.py", "version": "1.0.0"}
    )
    assert file.content == FILES["scripts/run.py"]


async def test_the_download_is_the_same_zip_every_time(public):
    first = await public.client.get(f"{API}/download", params={"slug": "pdf-report"})
    again = await public.client.get(
        f"{API}/download", params={"slug": "pdf-report", "version": "1.0.0"}
    )
    assert first.status_code == again.status_code == 200
    assert first.content == again.content
    sha = hashlib.sha256(first.content).hexdigest()
    assert first.headers["etag"] == f'"sha256:{sha}"'
    with zipfile.ZipFile(io.BytesIO(first.content)) as archive:
        assert {n: archive.read(n) for n in archive.namelist()} == FILES


async def test_resolve_finds_the_version_a_copy_is_of(public):
    await _listing(public, {**FILES, "scripts/run.py": b"print('v2')\n"})
    v1 = clawhub.package_fingerprint({p: PackageFile(d) for p, d in FILES.items()})
    found = await public.client.get(f"{API}/resolve", params={"slug": "pdf-report", "hash": v1})
    assert found.json() == {"match": {"version": "1.0.0"}, "latestVersion": {"version": "2.0.0"}}
    edited = hashlib.sha256(b"anything else").hexdigest()
    found = await public.client.get(f"{API}/resolve", params={"slug": "pdf-report", "hash": edited})
    assert found.json() == {"match": None, "latestVersion": {"version": "2.0.0"}}
    nobody = await public.client.get(f"{API}/resolve", params={"slug": "nobody", "hash": edited})
    assert nobody.json() == {"match": None, "latestVersion": None}


async def _upload(public, token: str, data: bytes, sha: str | None = None):
    sha = sha or hashlib.sha256(data).hexdigest()
    headers = {"Authorization": f"Bearer {token}"}
    ticket = await public.client.post(
        f"{API}/skills/-/upload-url",
        json={"path": "x", "size": len(data), "sha256": sha},
        headers=headers,
    )
    if ticket.status_code != 200:
        return ticket
    return await public.client.post(ticket.json()["uploadUrl"], content=data, headers=headers)


def _publish_body(version: str, stored: dict[str, str], files=FILES) -> dict[str, object]:
    return {
        "slug": "pdf-report",
        "displayName": "PDF report",
        "version": version,
        "changelog": "by clawhub",
        "files": [
            {
                "path": path,
                "size": len(data),
                "storageId": stored[path],
                "sha256": hashlib.sha256(data).hexdigest(),
            }
            for path, data in files.items()
        ],
    }


async def test_only_write_tokens_of_the_catalog_publish(public):
    for token in (public.tokens["write"], public.tokens["catalog-read"]):
        response = await _upload(public, token, b"data")
        assert response.status_code == 403
    anonymous = await public.client.post(f"{API}/skills", json={})
    assert anonymous.status_code == 401


@pytest.mark.both_databases
async def test_a_publish_is_checked_and_compare_and_swapped(public):
    token = public.tokens["catalog"]
    headers = {"Authorization": f"Bearer {token}"}
    wrong = await _upload(public, token, b"data", sha=hashlib.sha256(b"other").hexdigest())
    assert wrong.status_code == 422
    blocked = await _upload(public, token, private_key_block().encode())
    assert blocked.status_code == 422
    files = {**FILES, "scripts/run.py": b"print('v2')\n"}
    stored = {}
    for path, data in files.items():
        response = await _upload(public, token, data)
        assert response.status_code == 200, response.text
        stored[path] = response.json()["storageId"]
    for stale in ("1.0.0", "0.9.0", "1.0.0-rc.1"):
        response = await public.client.post(
            f"{API}/skills", json=_publish_body(stale, stored, files), headers=headers
        )
        assert response.status_code in (409, 422), stale
    assert response.status_code == 422
    response = await public.client.post(
        f"{API}/skills", json=_publish_body("1.0.1", stored, files), headers=headers
    )
    assert response.status_code == 201, response.text
    assert response.json()["version"] == "2.0.0"
    package = await public.registry.marketplace.read_listing("pdf-report", 2)
    assert {p: f.data for p, f in package.files.items()} == files


@pytest.mark.both_databases
async def test_two_publishes_of_the_same_next_version_one_wins(public):
    token = public.tokens["catalog"]
    headers = {"Authorization": f"Bearer {token}"}
    bodies = []
    for n in (2, 3):
        files = {**FILES, "scripts/run.py": f"print('v{n}')\n".encode()}
        stored = {}
        for path, data in files.items():
            stored[path] = (await _upload(public, token, data)).json()["storageId"]
        bodies.append(_publish_body("1.0.1", stored, files))
    answers = await asyncio.gather(
        *(public.client.post(f"{API}/skills", json=body, headers=headers) for body in bodies)
    )
    won, lost = sorted(a.status_code for a in answers)
    assert won == 201
    assert lost in {409, 412}
    listing = await public.registry.marketplace.listing("pdf-report")
    assert listing.version == 2


async def test_the_upload_url_is_under_the_public_base_url(serve):
    base = "https://skills.example.com/registry"
    served = await serve(settings=Settings(clawhub="public", public_base_url=base))
    issued = await served.registry.tokens.create("catalog", "write", actor="test")
    sha = hashlib.sha256(b"x").hexdigest()
    response = await served.client.post(
        f"{API}/skills/-/upload-url",
        json={"path": "SKILL.md", "size": 1, "sha256": sha},
        headers={"Authorization": f"Bearer {issued.token}"},
    )
    assert response.json()["uploadUrl"] == f"{base}{API}/uploads/{sha}"
