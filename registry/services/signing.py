"""The private key a registry signs with: loaded from settings, or made into a file (0600).

Belongs to no capability: every `Context` carries the registry's `Signing`, and the trust
capability (`registry/services/trust/`) registers keys and records attestations with it.

`SKILLREG_SIGNING_KEY` (the PEM, for a secret store) or the file
`SKILLREG_SIGNING_KEY_FILE` (default `./.skillreg/signing-key.pem`). The public keys and
their validity are the database's (`keys.py`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
)

from registry.domain.attestation import key_id, raw_public, sign
from registry.errors import SigningKeyUnavailable
from registry.services import fsops
from registry.settings import Settings


class Signer:
    """A private key and its id; signs statements into DSSE envelopes."""

    def __init__(self, private: Ed25519PrivateKey) -> None:
        self.private = private
        self.public = private.public_key()
        self.key_id = key_id(self.public)

    def sign(self, document: dict[str, Any]) -> bytes:
        return sign(document, self.private)

    def public_key_hex(self) -> str:
        """The public key as the keys document lists it: hex of the raw 32 bytes."""
        return raw_public(self.public).hex()

    def pem(self) -> bytes:
        return self.private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())

    @classmethod
    def generate(cls) -> Signer:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_pem(cls, data: bytes, where: str) -> Signer:
        try:
            private = load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise SigningKeyUnavailable(where, f"not a PEM private key: {exc}") from None
        if not isinstance(private, Ed25519PrivateKey):
            raise SigningKeyUnavailable(where, "not an Ed25519 key")
        return cls(private)


def load_signer(settings: Settings) -> Signer | None:
    """The key this process signs with, from settings; None if there is none yet."""
    if settings.signing_key is not None:
        return Signer.from_pem(
            settings.signing_key.get_secret_value().encode(), "SKILLREG_SIGNING_KEY"
        )
    path = Path(settings.signing_key_file)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SigningKeyUnavailable(str(path), exc.strerror or str(exc)) from None
    return Signer.from_pem(data, str(path))


def write_key_file(path: Path, signer: Signer) -> None:
    """Create the key file (0600, its folder made if missing); `FileExistsError` if it is there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fsops.create_file(path.name, folder, signer.pem(), executable=False, mode=0o600)
        fsops.fsync_fd(folder)
    finally:
        os.close(folder)


class Signing:
    """The key a registry signs versions with, and whether its public key is registered.

    Shared by every `Context` of one registry (`acting_as` copies): the key is loaded once
    from settings (`registry/services/trust/keys.py`), and registered before the first
    write that signs.
    """

    def __init__(self, signer: Signer | None = None) -> None:
        self.signer = signer
        self.registered = False
