"""Attestations: DSSE over an in-toto Statement, Ed25519, and the package's canonical digest."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from blake3 import blake3
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.domain.attestation import (
    key_id,
    package_digest,
    pae,
    sign,
    statement,
    verify,
)
from registry.domain.manifest import build_manifest
from registry.domain.model import PackageFile
from registry.errors import AttestationInvalid

FILES = {"SKILL.md": PackageFile(b"---\nname: a\n---\n"), "run.sh": PackageFile(b"x", True)}


def test_pae_is_dsse_v1():
    # The DSSE specification's own example.
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_the_canonical_digest_is_recomputed_from_the_files_as_documented():
    lines = b"skillreg-manifest-v1\n"
    for path in sorted(FILES, key=lambda p: p.encode()):
        file = FILES[path]
        mode = b"x" if file.executable else b"-"
        parts = (path.encode(), blake3(file.data).hexdigest().encode(), b"%d" % len(file.data))
        lines += b"\0".join((*parts, mode)) + b"\n"
    assert package_digest(build_manifest(FILES)) == hashlib.sha256(lines).hexdigest()


def test_a_signed_statement_verifies_and_names_its_key():
    key = Ed25519PrivateKey.generate()
    digest = package_digest(build_manifest(FILES))
    envelope = sign(statement("acme/personal/a@1", digest, {"version": 1}), key)
    checked = verify(envelope, {key_id(key.public_key()): key.public_key()})
    assert (checked.key_id, checked.subject, checked.digest) == (
        key_id(key.public_key()),
        "acme/personal/a@1",
        digest,
    )
    assert checked.predicate == {"version": 1}


def _tampered(envelope: bytes) -> bytes:
    body = json.loads(envelope)
    payload = json.loads(base64.b64decode(body["payload"]))
    payload["predicate"]["version"] = 2
    body["payload"] = base64.b64encode(json.dumps(payload).encode()).decode()
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("damage", "rule"),
    [
        (_tampered, "bad_signature"),
        (lambda e: e.replace(b'"keyid":"', b'"keyid":"0'), "unknown_key"),
        (lambda e: e[:-2], "malformed_envelope"),
        (lambda e: e.replace(b"in-toto+json", b"other+json"), "malformed_envelope"),
    ],
)
def test_a_damaged_envelope_is_refused_with_its_rule(damage, rule):
    key = Ed25519PrivateKey.generate()
    envelope = sign(statement("s", "0" * 64, {"version": 1}), key)
    with pytest.raises(AttestationInvalid) as refused:
        verify(damage(envelope), {key_id(key.public_key()): key.public_key()})
    assert refused.value.rule == rule


def test_another_key_under_a_trusted_id_does_not_verify():
    key, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    envelope = sign(statement("s", "0" * 64, {}), key)
    with pytest.raises(AttestationInvalid) as refused:
        verify(envelope, {key_id(key.public_key()): other.public_key()})
    assert refused.value.rule == "bad_signature"
