"""Trust over HTTP: who wrote a version is the token that authenticated, whatever it declared.

The attack of docs/trust.md: a write token publishes with `actor: token:<the owner token's
id>`. History, the version's row and its signed attestation record the writing token as
the principal; the claimed actor stays, labelled as declared. The attestation endpoint
serves the envelope a host verifies with the public keys document.
"""

from __future__ import annotations

import hashlib
import json

from registry.api.trust import verify_package
from tests.http.helpers import form
from tests.support.packages import package
from tests.support.scopes import ACME

SKILL = "/v1/workspaces/acme/skills/claimed"


async def test_a_declared_actor_never_becomes_who_wrote_the_version(served):
    # The attack declared `token:<the owner token's id>`; a random id may read as a
    # secret to the content check (then the write is refused outright), so the claim here
    # is a name that never does: what is recorded does not depend on what is claimed.
    claimed = "owner-of-acme"
    files = package("claimed")
    parts, data = form(files)
    meta = json.loads(data["meta"])
    meta["actor"] = claimed  # the write token claims to be someone else
    response = await served.client.put(
        SKILL,
        files=parts,
        data={"meta": json.dumps(meta)},
        headers={"If-None-Match": "*", **served.auth("write")},
    )
    assert response.status_code == 201, response.text
    writer = await served.registry.tokens.authenticate(served.tokens["write"])

    history = (await served.client.get(SKILL + "/history", headers=served.auth("read"))).json()
    [version] = history["items"]
    assert version["principal"] == f"token:{writer.id}"
    assert version["actor"] == claimed

    got = await served.client.get(SKILL + "/versions/1/attestation", headers=served.auth("read"))
    assert got.status_code == 200
    assert got.headers["content-type"] == "application/vnd.dsse.envelope.v1+json"
    assert got.headers["etag"] == f'"{hashlib.sha256(got.content).hexdigest()}"'
    keys = await served.client.get("/.well-known/skillreg/keys.json")  # no token needed
    assert keys.status_code == 200
    checked = verify_package(files, got.content, keys.json(), subject="acme/personal/claimed@1")
    assert checked.key_id == got.headers["skillreg-key-id"]
    assert checked.predicate["principal"] == f"token:{writer.id}"
    assert checked.predicate["declared_actor"] == claimed


async def test_an_unsigned_version_answers_404_with_its_code(served):
    response = await served.client.put(
        SKILL, files=form(package("claimed"))[0], headers={"If-None-Match": "*", **served.auth()}
    )
    assert response.status_code == 201
    async with served.registry.engine.begin() as conn:
        await conn.exec_driver_sql("DELETE FROM attestations")
    missing = await served.client.get(SKILL + "/versions/1/attestation", headers=served.auth())
    assert missing.status_code == 404
    assert missing.json()["code"] == "attestation_missing"


async def test_an_archive_names_its_attestation_even_for_a_unicode_slug(served):
    slug = "отчёт-pdf"
    await served.registry.write_package(ACME, slug, package(slug), expected_head=None, actor="t")
    archive = await served.client.get(
        f"/v1/workspaces/acme/skills/{slug}/archive", headers=served.auth("read")
    )
    assert archive.status_code == 200
    sealed = await served.registry.trust.attestation(ACME, slug, 1)
    assert archive.headers["skillreg-attestation"] == sealed.digest
    link = archive.headers["link"].split(";")[0].strip("<>")
    fetched = await served.client.get(link, headers=served.auth("read"))
    assert fetched.content == sealed.envelope
