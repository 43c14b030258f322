"""`skillreg sync` verifies before it applies: each attack on the signed state, played by a
registry that lies (tests/support/hostile.py) against the real client.

Every case first lets the host apply an honest state, then serves the attack, and checks
that the target still holds what it held (nothing written, moved or removed), the rule the
client names, and what the host concluded (`trust.json`: verified, stale, refused).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from registry.client import Sync
from registry.client.trust import TrustRoot
from registry.domain.attestation import envelope_digest, key_id, keys_document, sign, statement
from registry.domain.model import Scope
from registry.domain.signed_state import endorse
from registry.errors import RemoteRefused
from registry.services.materialize.report import ReconcileReport
from registry.services.signing import Signer
from tests.support.hostile import HostileRegistry, Reply, package_digest, skill_md
from tests.support.targets import load_skill

V1 = {"SKILL.md": skill_md("good"), "notes.md": b"one\n"}
V2 = {"SKILL.md": skill_md("good"), "notes.md": b"two\n"}


@pytest.fixture
async def hostile() -> AsyncIterator[HostileRegistry]:
    server = HostileRegistry()
    await server.start()
    yield server
    await server.stop()


async def _sync(
    server: HostileRegistry,
    target: Path,
    *,
    trust: TrustRoot | None = None,
    clock: datetime | None = None,
) -> ReconcileReport | Exception:
    moment = clock or datetime.now(UTC)
    syncer = Sync(server.url, "t", Scope("acme"), target, trust=trust, clock=lambda: moment)
    async with syncer:
        try:
            return await syncer.once()
        except Exception as exc:
            return exc


def _trust(target: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((target / ".skillreg" / "trust.json").read_bytes())
    return loaded


def _notes(target: Path) -> bytes:
    return load_skill(target, "good")["notes.md"][0]


async def _applied_v1(server: HostileRegistry, target: Path) -> None:
    """The honest start: version 1 of `good` applied under the server's pinned key."""
    server.add("good", V1)
    report = await _sync(server, target, trust=server.root())
    assert isinstance(report, ReconcileReport)
    assert report.written == ["good"]
    assert _trust(target)["status"] == "verified"


def _serve_v2(server: HostileRegistry) -> None:
    server.state["skills"] = []
    server.blobs.clear()
    server.add("good", V2, version=2)
    server.seq += 1
    server.issued += timedelta(seconds=1)


def _refused(outcome: ReconcileReport | Exception, rule: str) -> RemoteRefused:
    assert isinstance(outcome, RemoteRefused), outcome
    assert outcome.rule == rule
    return outcome


async def test_a_first_sync_pins_nothing_it_was_not_given(hostile, tmp_path):
    hostile.add("good", V1)
    target = tmp_path / "skills"
    _refused(await _sync(hostile, target), "no_pinned_keys")
    assert hostile.seen == []  # not even the desired state was asked for
    assert not (target / "good").exists()

    hostile.keys_document = keys_document([_key_entry(hostile.key)])
    wrong = TrustRoot.from_fingerprint("ab" * 32)
    _refused(await _sync(hostile, target, trust=wrong), "no_pinned_keys")
    assert not (target / "good").exists()

    right = TrustRoot.from_fingerprint(hostile.key.key_id)
    assert isinstance(await _sync(hostile, target, trust=right), ReconcileReport)
    assert _notes(target) == b"one\n"
    assert _trust(target)["keys"] == {hostile.key.key_id: hostile.key.public_key_hex()}


async def test_a_state_signed_by_a_key_the_host_does_not_trust_changes_nothing(hostile, tmp_path):
    target = tmp_path / "skills"
    await _applied_v1(hostile, target)
    _serve_v2(hostile)
    pinned = hostile.key
    hostile.key = Signer.generate()  # the attacker's own key...
    rogue = endorse(hostile.key.public, [pinned.key_id], Signer.generate().private)
    hostile.keys_document = keys_document(  # ...endorsed by a key nobody trusts
        [_key_entry(pinned), _key_entry(hostile.key, endorsement=rogue)]
    )
    _refused(await _sync(hostile, target), "unknown_key")
    assert _notes(target) == b"one\n"
    trust = _trust(target)
    assert (trust["status"], trust["keys"]) == ("refused", {pinned.key_id: pinned.public_key_hex()})
    assert "unknown_key" in str(trust["detail"])

    hostile.signed = None  # no signature at all
    _refused(await _sync(hostile, target), "unsigned_state")
    assert _notes(target) == b"one\n"


async def test_a_rotation_endorsed_by_the_pinned_key_is_followed(hostile, tmp_path):
    target = tmp_path / "skills"
    await _applied_v1(hostile, target)
    old = hostile.key
    new = Signer.generate()
    hostile.keys_document = keys_document(
        [_key_entry(old), _key_entry(new, endorse(new.public, [old.key_id], old.private))]
    )
    hostile.key = new
    _serve_v2(hostile)
    report = await _sync(hostile, target)
    assert isinstance(report, ReconcileReport)
    assert _notes(target) == b"two\n"
    assert _trust(target)["keys"] == {new.key_id: new.public_key_hex()}

    hostile.key = old  # the key it replaced signs no more states for this host
    hostile.seq += 1
    _refused(await _sync(hostile, target), "unknown_key")


@pytest.mark.parametrize("older", ["lower sequence", "same sequence, issued earlier"])
async def test_a_state_older_than_the_one_applied_is_refused(hostile, tmp_path, older):
    target = tmp_path / "skills"
    hostile.seq = 5
    await _applied_v1(hostile, target)
    before_seq, before_issued = hostile.seq, hostile.issued
    _serve_v2(hostile)
    assert isinstance(await _sync(hostile, target), ReconcileReport)
    assert _notes(target) == b"two\n"

    hostile.state["skills"] = []  # the attacker replays version 1's state...
    hostile.add("good", V1)
    if older == "lower sequence":
        hostile.seq, hostile.issued = before_seq, before_issued
    else:  # ...or re-signs it with the newest sequence, as of a moment before
        hostile.issued = before_issued
    refused = _refused(await _sync(hostile, target), "rollback")
    assert "was applied" in refused.detail
    assert _notes(target) == b"two\n"
    assert _trust(target)["status"] == "refused"


@pytest.mark.parametrize("answer", ["the same state again", "304 for ever"])
async def test_an_expired_state_freezes_nothing_and_the_host_says_it_is_stale(
    hostile, tmp_path, answer
):
    target = tmp_path / "skills"
    await _applied_v1(hostile, target)
    if answer == "304 for ever":
        hostile.route("GET", "/desired", lambda _: Reply(304, b"", {"etag": '"hostile"'}))
    later = hostile.expires + timedelta(seconds=1)
    refused = _refused(await _sync(hostile, target, clock=later), "expired")
    assert hostile.expires.isoformat() in refused.detail
    assert _notes(target) == b"one\n"
    trust = _trust(target)
    assert (trust["status"], trust["since"]) == ("stale", hostile.expires.isoformat())
    reports = [s for s in hostile.seen if s.path.endswith("/trust")]
    assert reports, "the host told the registry it is stale"

    hostile.routes.clear()  # the registry is back with a fresh state
    _serve_v2(hostile)
    hostile.expires = later + timedelta(hours=1)
    assert isinstance(await _sync(hostile, target, clock=later), ReconcileReport)
    assert _notes(target) == b"two\n"
    assert _trust(target)["status"] == "verified"


async def test_a_listing_of_one_moment_under_the_signature_of_another_is_refused(hostile, tmp_path):
    target = tmp_path / "skills"
    await _applied_v1(hostile, target)
    old_signature = hostile.sign()
    _serve_v2(hostile)
    hostile.signed = old_signature  # version 2's listing, version 1's signed state
    _refused(await _sync(hostile, target), "mixed_state")
    assert _notes(target) == b"one\n"

    hostile.signed = True
    hostile.state["skills"].append(hostile.state["skills"][0] | {"slug": "extra"})
    hostile.signed = hostile.sign(hostile.state["skills"][:1])  # a skill the signature lacks
    _refused(await _sync(hostile, target), "mixed_state")
    assert not (target / "extra").exists()


@pytest.mark.parametrize("forgery", ["another subject", "not the named one", "untrusted key"])
async def test_a_package_whose_attestation_does_not_verify_is_not_applied(
    hostile, tmp_path, forgery
):
    target = tmp_path / "skills"
    entry = hostile.add("good", V1)
    hostile.add("other", {"SKILL.md": skill_md("other")})
    digest = package_digest(entry["files"])
    subject = "acme/personal/good@1" if forgery != "another subject" else "acme/personal/x@1"
    key = hostile.key if forgery != "untrusted key" else Signer.generate()
    envelope = sign(statement(subject, digest, {"slug": "good"}), key.private)
    named = envelope_digest(envelope if forgery != "not the named one" else b"{}")
    hostile.attestations["good"] = named
    hostile.route("GET", "/skills/good/versions/1/attestation", lambda _: Reply(200, envelope))
    report = await _sync(hostile, target, trust=hostile.root())
    assert isinstance(report, ReconcileReport)
    outcome = report.outcome("good")
    assert outcome is not None
    assert isinstance(outcome.error, RemoteRefused)
    expected = "unknown_key" if forgery == "untrusted key" else "subject_mismatch"
    assert outcome.error.rule == expected
    assert not (target / "good").exists()
    assert report.written == ["other"]  # the rest of the run goes on

    hostile.routes.clear()  # the honest attestation: verified once, then known
    honest = sign(statement("acme/personal/good@1", digest, {}), hostile.key.private)
    hostile.attestations["good"] = envelope_digest(honest)
    hostile.route("GET", "/attestation", lambda _: Reply(200, honest))
    for _ in range(2):
        again = await _sync(hostile, target)
        assert isinstance(again, ReconcileReport)
        assert again.ok
    assert load_skill(target, "good")["notes.md"] == (b"one\n", False)
    assert hostile.count("GET", "/attestation") == 2  # the forgery's, then the honest one once


def _key_entry(key: Signer, endorsement: bytes | None = None) -> dict[str, object]:
    return {
        "keyid": key_id(key.public),
        "algorithm": "ed25519",
        "public_key": key.public_key_hex(),
        "valid_from": datetime.now(UTC).isoformat(),
        "valid_until": None,
        "endorsement": None if endorsement is None else endorsement.decode(),
    }
