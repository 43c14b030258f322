"""`reg.trust`: the keys that sign versions, and every version's attestation (docs/trust.md).

    keys()             every key, with its validity and whether this process signs with it
    keys_document()    the public keys as hosts pin them (`/.well-known/skillreg/keys.json`)
    create_key()       a key file where settings say, if none is configured
    rotate_key()       a new key; the old one retired, its signatures still verifiable
    attestation(...)   a version's signed statement (DSSE envelope), its digest and key
    verify(...)        a version's attestation checked against the keys and its own files

`verify_package` checks a package's files against an attestation and a keys document
without any registry: what a host does offline.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from registry.domain.attestation import Verified, keys_document, keys_from_document
from registry.domain.manifest import build_manifest
from registry.domain.model import FileInput, Scope, as_package_file
from registry.services.context import Context
from registry.services.trust import attest, keys
from registry.services.trust.attest import VersionAttestation
from registry.services.trust.keys import KeyInfo


class Trust:
    """Signing keys and attestations: `reg.trust`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    async def keys(self) -> list[KeyInfo]:
        """Every key, oldest first."""
        return await keys.listing(self.ctx, self.ctx.signing.signer)

    async def keys_document(self) -> dict[str, Any]:
        """The public keys with their validity: what hosts pin."""
        return keys_document([k.document() for k in await self.keys()])

    async def create_key(self) -> KeyInfo:
        """Create the key file `SKILLREG_SIGNING_KEY_FILE` names (refused if a key exists)."""
        signer = await keys.create(self.ctx, self.ctx.settings)
        self.ctx.signing.signer, self.ctx.signing.registered = signer, True
        return next(k for k in await self.keys() if k.key_id == signer.key_id)

    async def rotate_key(self) -> tuple[str | None, KeyInfo]:
        """Replace the signing key; the old one is retired (its signatures stay valid)."""
        old, signer = await keys.rotate(self.ctx, self.ctx.settings)
        self.ctx.signing.signer, self.ctx.signing.registered = signer, True
        return old, next(k for k in await self.keys() if k.key_id == signer.key_id)

    async def attestation(
        self, scope: Scope, slug: str, version: int | None = None
    ) -> VersionAttestation:
        """A version's attestation (the head's by default); `AttestationMissing` if unsigned."""
        return await attest.read(self.ctx, scope, slug, version)

    async def verify(self, scope: Scope, slug: str, version: int | None = None) -> Verified:
        """Check a version's attestation with the registry's keys against its own files."""
        return await attest.verified(self.ctx, scope, slug, version)


def verify_package(
    files: Mapping[str, FileInput],
    envelope: bytes,
    document: Mapping[str, Any],
    *,
    subject: str | None = None,
) -> Verified:
    """Offline: `files` are the package `envelope` attests, signed by a key of `document`.

    `AttestationInvalid` names the rule that failed; nothing here needs a registry.
    """
    package = {path: as_package_file(f, argument=f"files[{path!r}]") for path, f in files.items()}
    trusted = keys_from_document(document)
    return attest.check(envelope, trusted, build_manifest(package), expected_subject=subject)
