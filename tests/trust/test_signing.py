"""Every version is signed, with who really wrote it (docs/trust.md, part 2 of the threat model).

On both databases: the attestation commits with its version and verifies against the
registry's keys and the version's own files; its predicate names the principal the
registry authenticated and, apart, the actor the writer declared; a registry with no key
stores nothing; rotation keeps every earlier signature verifiable and stops a process
still holding the retired key from writing.
"""

from __future__ import annotations

import getpass

import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.api.trust import verify_package
from registry.db import keys as db_keys
from registry.domain.attestation import key_id
from registry.errors import AttestationInvalid, AttestationMissing, SigningKeyUnavailable
from registry.services.signing import Signer
from tests.support.packages import package, publish
from tests.support.scopes import ACME
from tests.support.state import PACKAGE_TABLES, db_state, store_digests


async def test_a_version_is_signed_with_its_principal_and_its_declared_actor(registry):
    files = package("signed")
    await publish(registry, "signed", files, actor="claims-to-be-the-owner", sources=["chat:7"])
    as_token = registry.acting_as("token:abc123")
    await publish(as_token, "signed", package("signed", tag="2"), expected=1, actor="someone")

    first = await registry.trust.verify(ACME, "signed", 1)
    assert first.subject == "acme/personal/signed@1"
    assert first.predicate["principal"] == f"os:{getpass.getuser()}"
    assert first.predicate["declared_actor"] == "claims-to-be-the-owner"
    assert first.predicate["sources"] == ["chat:7"]
    assert (first.predicate["version"], first.predicate["parent"]) == (1, None)
    second = await registry.trust.verify(ACME, "signed", 2)
    assert (second.predicate["principal"], second.predicate["declared_actor"]) == (
        "token:abc123",
        "someone",
    )
    history = await registry.history(ACME, "signed")
    assert [(v.principal, v.actor) for v in history.items] == [
        ("token:abc123", "someone"),
        (f"os:{getpass.getuser()}", "claims-to-be-the-owner"),
    ]
    stored = await registry.trust.attestation(ACME, "signed", 1)
    document = await registry.trust.keys_document()
    checked = verify_package(files, stored.envelope, document, subject=stored.subject)
    assert checked.digest == stored.package_digest


async def test_the_attestation_is_about_exactly_these_files(registry):
    files = package("exact")
    await publish(registry, "exact", files)
    stored = await registry.trust.attestation(ACME, "exact")
    document = await registry.trust.keys_document()
    changed = {**files, "notes.md": b"added afterwards\n"}
    with pytest.raises(AttestationInvalid) as refused:
        verify_package(changed, stored.envelope, document)
    assert refused.value.rule == "subject_mismatch"
    with pytest.raises(AttestationInvalid) as other:
        verify_package(files, stored.envelope, document, subject="acme/personal/exact@2")
    assert other.value.rule == "subject_mismatch"


async def test_a_registry_without_a_key_stores_nothing(make_registry, monkeypatch):
    monkeypatch.delenv("SKILLREG_SIGNING_KEY")
    unsigned = await make_registry()
    unsigned.ctx.signing.signer = None
    before = await db_state(unsigned, PACKAGE_TABLES)
    with pytest.raises(SigningKeyUnavailable):
        await publish(unsigned, "nokey", package("nokey"))
    assert await db_state(unsigned, PACKAGE_TABLES) == before
    assert await store_digests(unsigned.blobs) == set()


async def test_rotation_keeps_old_signatures_and_retires_the_old_key(make_registry):
    first = await make_registry()
    await publish(first, "rotated", package("rotated"))
    old_key = first.ctx.signing.signer.key_id
    second = await make_registry(signer=Signer(Ed25519PrivateKey.generate()))
    await second.initialize()  # registers the new key

    async def retire(conn):
        await db_keys.retire_keys(conn, second.ctx.signing.signer.key_id, second.ctx.clock.now())

    await second.ctx.write(retire)
    await publish(second, "rotated", package("rotated", tag="2"), expected=1)

    assert (await second.trust.verify(ACME, "rotated", 1)).key_id == old_key
    assert (await second.trust.verify(ACME, "rotated", 2)).key_id == key_id(
        second.ctx.signing.signer.public
    )
    listed = {k.key_id: k for k in await second.trust.keys()}
    assert listed[old_key].retired_at is not None
    before = await db_state(first, PACKAGE_TABLES)
    with pytest.raises(SigningKeyUnavailable):
        await publish(first, "rotated", package("rotated", tag="3"), expected=2)
    assert await db_state(first, PACKAGE_TABLES) == before


async def test_a_version_published_unsigned_says_so(registry):
    await publish(registry, "old", package("old"))
    async with registry.engine.begin() as conn:
        await conn.execute(sa.text("DELETE FROM attestations"))
    with pytest.raises(AttestationMissing):
        await registry.trust.attestation(ACME, "old", 1)


async def test_a_lock_file_names_each_pinned_versions_attestation(registry):
    await publish(registry, "locked", package("locked"))
    lock = await registry.lock_file(ACME)
    [pin] = lock.skills
    stored = await registry.trust.attestation(ACME, "locked", 1)
    assert pin.attestation == stored.digest
    again = type(lock).loads(lock.dumps())
    assert again.skills[0].attestation == stored.digest
