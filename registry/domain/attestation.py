"""Signed statements about versions: an in-toto Statement (v1) in a DSSE envelope, Ed25519.

A version's attestation says, under the registry's signature, which package a version is
and who really wrote it (docs/trust.md). This module is pure: it builds and checks the
bytes; keys come from the caller.

The package's canonical digest (the Statement's subject) is SHA-256 over the manifest's
canonical encoding (`Manifest.canonical_bytes`, docs/package-format.md), so anyone holding
the files recomputes it: hash each file with BLAKE3, list `path NUL digest NUL size NUL
x|-` lines in the order of the paths' UTF-8 bytes after the line `skillreg-manifest-v1`,
and take the SHA-256 of those bytes.

DSSE (v1.0) signs the pre-authentication encoding of the payload and its type, never the
JSON as parsed, so no canonical JSON is needed:

    PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body

A key's id is the lower-case hex SHA-256 of its raw 32-byte Ed25519 public key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from registry.domain.manifest import Manifest
from registry.errors import AttestationInvalid

STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"
PREDICATE_TYPE: Final = "urn:skill-registry:predicate:version:v1"
DIGEST_ALGORITHM: Final = "sha256"

RULE_ENVELOPE: Final = "malformed_envelope"
RULE_STATEMENT: Final = "malformed_statement"
RULE_UNKNOWN_KEY: Final = "unknown_key"
RULE_SIGNATURE: Final = "bad_signature"
RULE_SUBJECT: Final = "subject_mismatch"
RULE_KEYS: Final = "malformed_keys"
KEYS_FORMAT: Final = "skillreg-keys-v1"


def package_digest(manifest: Manifest) -> str:
    """The canonical digest of a package: SHA-256 of its manifest's canonical encoding."""
    return hashlib.sha256(manifest.canonical_bytes()).hexdigest()


def key_id(public: Ed25519PublicKey) -> str:
    """The id of a public key: the hex SHA-256 of its raw bytes."""
    return hashlib.sha256(raw_public(public)).hexdigest()


def raw_public(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(Encoding.Raw, PublicFormat.Raw)


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what a signature covers."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def statement(
    subject: str,
    digest: str,
    predicate: Mapping[str, Any],
    predicate_type: str = PREDICATE_TYPE,
) -> dict[str, Any]:
    """An in-toto Statement (v1) about one package, by its canonical digest."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": subject, "digest": {DIGEST_ALGORITHM: digest}}],
        "predicateType": predicate_type,
        "predicate": dict(predicate),
    }


def sign(
    document: Mapping[str, Any], key: Ed25519PrivateKey, payload_type: str = PAYLOAD_TYPE
) -> bytes:
    """A DSSE envelope holding `document` (JSON), signed with `key`; its bytes (JSON)."""
    payload = json.dumps(document, sort_keys=True, separators=(",", ":")).encode("utf-8")
    signature = key.sign(pae(payload_type, payload))
    envelope = {
        "payload": base64.b64encode(payload).decode("ascii"),
        "payloadType": payload_type,
        "signatures": [
            {"keyid": key_id(key.public_key()), "sig": base64.b64encode(signature).decode("ascii")}
        ],
    }
    return json.dumps(envelope, sort_keys=True, separators=(",", ":")).encode("utf-8")


def envelope_digest(envelope: bytes) -> str:
    """The SHA-256 of an envelope's bytes: how lock files and indexes name an attestation."""
    return hashlib.sha256(envelope).hexdigest()


@dataclass(frozen=True)
class Verified:
    """A statement whose signature checked out: the key that signed it, and its contents."""

    key_id: str
    subject: str
    digest: str
    predicate: dict[str, Any]


def verify(
    envelope: bytes,
    keys: Mapping[str, Ed25519PublicKey],
    predicate_type: str = PREDICATE_TYPE,
) -> Verified:
    """Check `envelope`'s signature by one of `keys` (by id); its statement, or refuse.

    `AttestationInvalid(rule)`: the envelope or the statement is malformed, no signature
    is by a known key (`unknown_key`), or a known key's signature does not verify
    (`bad_signature`). The payload is parsed only after its signature verified. A
    statement of another predicate than `predicate_type` (a revocation's, when a
    version's is asked for) is refused.
    """
    kid, payload = open_envelope(envelope, keys, PAYLOAD_TYPE)
    return _statement(kid, payload, predicate_type)


def open_envelope(
    envelope: bytes, keys: Mapping[str, Ed25519PublicKey], payload_type: str
) -> tuple[str, bytes]:
    """The id of the key that signed `envelope` and its payload, once the signature verified.

    `AttestationInvalid(rule)` as `verify` says; also when the payload is of another type
    than `payload_type` (a statement about a version is never taken for a state).
    """
    try:
        body = json.loads(envelope)
        payload = base64.b64decode(body["payload"], validate=True)
        found_type = str(body["payloadType"])
        signatures = [
            (str(s["keyid"]), base64.b64decode(s["sig"], validate=True)) for s in body["signatures"]
        ]
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise AttestationInvalid(RULE_ENVELOPE, str(exc)) from None
    if found_type != payload_type:
        raise AttestationInvalid(RULE_ENVELOPE, f"payload type {found_type!r}")
    signed = pae(found_type, payload)
    known = [(k, s) for k, s in signatures if k in keys]
    if not known:
        raise AttestationInvalid(RULE_UNKNOWN_KEY, "no signature by a key this host trusts")
    for kid, sig in known:
        try:
            keys[kid].verify(sig, signed)
        except InvalidSignature:
            continue
        return kid, payload
    raise AttestationInvalid(RULE_SIGNATURE, "the signature does not verify")


def _statement(kid: str, payload: bytes, predicate_type: str) -> Verified:
    try:
        document = json.loads(payload)
        kinds = (document["_type"], document["predicateType"])
        [subject] = document["subject"]
        verified = Verified(
            kid, str(subject["name"]), str(subject["digest"][DIGEST_ALGORITHM]),
            dict(document["predicate"]),
        )  # fmt: skip
    except (ValueError, KeyError, TypeError) as exc:
        raise AttestationInvalid(RULE_STATEMENT, str(exc)) from None
    if kinds != (STATEMENT_TYPE, predicate_type):
        raise AttestationInvalid(RULE_STATEMENT, f"not a version statement: {kinds!r}")
    return verified


def keys_document(keys: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The public keys document a registry serves and a host pins (docs/trust.md)."""
    return {"format": KEYS_FORMAT, "keys": [dict(k) for k in keys]}


def keys_from_document(document: Mapping[str, Any]) -> dict[str, Ed25519PublicKey]:
    """The keys a document lists, by id, each id checked against its key.

    `AttestationInvalid(malformed_keys)` if the document is not one, or an id is not the
    SHA-256 of its key.
    """
    try:
        kind = document["format"]
        entries = [(str(e["keyid"]), bytes.fromhex(str(e["public_key"]))) for e in document["keys"]]
        found = {kid: Ed25519PublicKey.from_public_bytes(raw) for kid, raw in entries}
    except (ValueError, KeyError, TypeError) as exc:
        raise AttestationInvalid(RULE_KEYS, str(exc)) from None
    if kind != KEYS_FORMAT:
        raise AttestationInvalid(RULE_KEYS, f"format {kind!r}")
    for kid, public in found.items():
        if key_id(public) != kid:
            raise AttestationInvalid(RULE_KEYS, f"key id {kid[:16]} does not name its key")
    return found
