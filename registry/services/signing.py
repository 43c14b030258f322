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
from typing import TYPE_CHECKING, Any

from registry.errors import SigningKeyUnavailable
from registry.services import fsops

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from registry.settings import Settings

# cryptography (and `registry.domain.attestation`, which imports it) is imported when a key
# is first made, read or used: a command that only reads never loads the key (`Signing`).


class Signer:
    """A private key and its id; signs statements into DSSE envelopes."""

    def __init__(self, private: Ed25519PrivateKey) -> None:
        from registry.domain.attestation import key_id  # noqa: PLC0415 - see the imports

        self.private = private
        self.public = private.public_key()
        self.key_id = key_id(self.public)

    def sign(self, document: dict[str, Any]) -> bytes:
        from registry.domain.attestation import sign  # noqa: PLC0415 - see the imports

        return sign(document, self.private)

    def public_key_hex(self) -> str:
        """The public key as the keys document lists it: hex of the raw 32 bytes."""
        from registry.domain.attestation import raw_public  # noqa: PLC0415 - see the imports

        return raw_public(self.public).hex()

    def pem(self) -> bytes:
        from cryptography.hazmat.primitives.serialization import (  # noqa: PLC0415
            Encoding,
            NoEncryption,
            PrivateFormat,
        )

        return self.private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())

    @classmethod
    def generate(cls) -> Signer:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
            Ed25519PrivateKey,
        )

        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_pem(cls, data: bytes, where: str) -> Signer:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
            Ed25519PrivateKey,
        )
        from cryptography.hazmat.primitives.serialization import (  # noqa: PLC0415
            load_pem_private_key,
        )

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

    Given `settings` instead of a signer, the key is loaded from them when `signer` is
    first read (`load_signer`): a registry that only reads (`skillreg list`, `show`,
    `history`) never reads the key file nor imports cryptography. A key that cannot be
    loaded raises `SigningKeyUnavailable` there, on every read until it can.
    """

    def __init__(self, signer: Signer | None = None, *, settings: Settings | None = None) -> None:
        self._signer = signer
        self._unloaded = settings if signer is None else None
        self.registered = False

    @property
    def signer(self) -> Signer | None:
        """The key; None if the settings name none (a registry without a key)."""
        if self._unloaded is not None:
            self._signer = load_signer(self._unloaded)
            self._unloaded = None
        return self._signer

    @signer.setter
    def signer(self, signer: Signer | None) -> None:
        self._signer, self._unloaded = signer, None
