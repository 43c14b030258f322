"""The registry's signing keys: the private key from settings, public keys in the database.

Public keys are kept with their validity:

    create   a new key file (0600; refused if one is there), its public key registered
    rotate   a new key file in place of the old (kept beside it, `<file>.<id16>.retired`),
             the new key registered, every other key retired: it signs no more, and every
             signature it made stays verifiable for good
    list     every key: id, created, retired, and which one this process signs with
    export   the public keys with their validity (what hosts pin, and what
             `/.well-known/skillreg/keys.json` serves)

The key a process signs with comes from settings: `SKILLREG_SIGNING_KEY` (the PEM, for a
secret store) or the file `SKILLREG_SIGNING_KEY_FILE` (default
`./.skillreg/signing-key.pem`). A process registers its key on first use, unless that key
was retired (`SigningKeyUnavailable`: the process must be given the new key). Processes
serving one registry share one key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import keys as db_keys
from registry.domain.attestation import key_id, raw_public, sign
from registry.errors import SigningKeyUnavailable
from registry.services import fsops
from registry.services.context import Context
from registry.settings import Settings

ALGORITHM: Final = "ed25519"
RETIRED_SUFFIX: Final = ".retired"


class Signer:
    """A private key and its id; signs statements into DSSE envelopes."""

    def __init__(self, private: Ed25519PrivateKey) -> None:
        self.private = private
        self.public = private.public_key()
        self.key_id = key_id(self.public)

    def sign(self, document: dict[str, Any]) -> bytes:
        return sign(document, self.private)

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


@dataclass(frozen=True)
class KeyInfo:
    """A signing key as `keys list` and the keys document show it."""

    key_id: str
    public_key: str  # hex of the raw 32 bytes
    created_at: datetime
    retired_at: datetime | None
    current: bool  # the key this process signs with

    def document(self) -> dict[str, Any]:
        return {
            "keyid": self.key_id,
            "algorithm": ALGORITHM,
            "public_key": self.public_key,
            "valid_from": self.created_at.isoformat(),
            "valid_until": None if self.retired_at is None else self.retired_at.isoformat(),
        }


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


async def register(ctx: Context, signer: Signer) -> None:
    """Record the signer's public key if it is new; refuse a key that was retired."""

    async def work(conn: AsyncConnection) -> None:
        await register_in(conn, signer, ctx.clock.now())

    await ctx.write(work)


async def register_in(conn: AsyncConnection, signer: Signer, now: datetime) -> None:
    """`register` inside the caller's transaction (the publish's, for a first signature)."""
    found = await db_keys.key(conn, signer.key_id)
    if found is None:
        await db_keys.insert_key(conn, signer.key_id, raw_public(signer.public).hex(), now)
    elif found.retired_at is not None:
        raise SigningKeyUnavailable(
            signer.key_id[:16], "this key was retired; give the process the current one"
        )


async def create(ctx: Context, settings: Settings) -> Signer:
    """A new key file at `SKILLREG_SIGNING_KEY_FILE`, registered; refused if one is there."""
    if settings.signing_key is not None:
        raise SigningKeyUnavailable("SKILLREG_SIGNING_KEY", "the key comes from the environment")
    path = Path(settings.signing_key_file)
    signer = Signer.generate()
    try:
        write_key_file(path, signer)
    except FileExistsError:
        raise SigningKeyUnavailable(str(path), "a key file is there already") from None
    await register(ctx, signer)
    return signer


async def rotate(ctx: Context, settings: Settings) -> tuple[str | None, Signer]:
    """Replace the key file with a new key; the old one is kept beside it and retired.

    Returns the old key's id (None if there was none) and the new signer. Signatures by
    the old key stay verifiable: its public key stays in the database, with the time it
    was retired.
    """
    if settings.signing_key is not None:
        raise SigningKeyUnavailable("SKILLREG_SIGNING_KEY", "rotate the key in its secret store")
    path = Path(settings.signing_key_file)
    old = load_signer(settings)
    new = Signer.generate()
    staged = path.with_name(f".{path.name}.{new.key_id[:16]}.new")
    write_key_file(staged, new)
    await register(ctx, new)
    if old is not None:
        os.link(path, path.with_name(f"{path.name}.{old.key_id[:16]}{RETIRED_SUFFIX}"))
    staged.replace(path)
    fsops.fsync_path(path.parent)

    async def retire(conn: AsyncConnection) -> None:
        await db_keys.retire_keys(conn, new.key_id, ctx.clock.now())

    await ctx.write(retire)
    return (None if old is None else old.key_id), new


async def listing(ctx: Context, signer: Signer | None) -> list[KeyInfo]:
    """Every key, oldest first."""
    rows = await ctx.read(db_keys.keys)
    current = None if signer is None else signer.key_id
    return [
        KeyInfo(r.key_id, r.public_key, r.created_at, r.retired_at, r.key_id == current)
        for r in rows
    ]


def public_keys(infos: list[KeyInfo]) -> dict[str, Ed25519PublicKey]:
    """The keys by id, as `attestation.verify` takes them."""
    return {
        i.key_id: Ed25519PublicKey.from_public_bytes(bytes.fromhex(i.public_key)) for i in infos
    }
