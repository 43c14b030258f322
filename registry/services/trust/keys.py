"""The registry's signing keys: the private key from settings, public keys in the database.

Public keys are kept with their validity:

    create   a new key file (0600; refused if one is there), its public key registered
    rotate   a new key file in place of the old (kept beside it, `<file>.<id16>.retired`),
             the new key registered with its endorsement (the old key vouching for it, so
             hosts that pinned the old key follow), every other key retired: it signs no
             more, and every signature it made stays verifiable for good
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

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import keys as db_keys
from registry.domain.signed_state import endorse
from registry.errors import SigningKeyUnavailable, StateConflict
from registry.services import fsops
from registry.services.context import Context
from registry.services.signing import Signer, load_signer, write_key_file
from registry.settings import Settings

ALGORITHM: Final = "ed25519"
RETIRED_SUFFIX: Final = ".retired"


@dataclass(frozen=True)
class KeyInfo:
    """A signing key as `keys list` and the keys document show it."""

    key_id: str
    public_key: str  # hex of the raw 32 bytes
    created_at: datetime
    retired_at: datetime | None
    current: bool  # the key this process signs with
    endorsement: bytes | None = None  # the key it replaced vouching for it (a DSSE envelope)

    def document(self) -> dict[str, Any]:
        return {
            "keyid": self.key_id,
            "algorithm": ALGORITHM,
            "public_key": self.public_key,
            "valid_from": self.created_at.isoformat(),
            "valid_until": None if self.retired_at is None else self.retired_at.isoformat(),
            "endorsement": None if self.endorsement is None else self.endorsement.decode(),
        }


async def register(ctx: Context, signer: Signer, endorsement: bytes | None = None) -> None:
    """Record the signer's public key if it is new; refuse a key that was retired."""

    async def work(conn: AsyncConnection) -> None:
        await register_in(conn, signer, ctx.clock.now(), endorsement)

    await ctx.write(work)


async def register_in(
    conn: AsyncConnection, signer: Signer, now: datetime, endorsement: bytes | None = None
) -> None:
    """`register` inside the caller's transaction (the publish's, for a first signature)."""
    found = await db_keys.key(conn, signer.key_id)
    if found is None:
        await db_keys.insert_key(conn, signer.key_id, signer.public_key_hex(), now, endorsement)
    elif found.retired_at is not None:
        raise SigningKeyUnavailable(
            signer.key_id[:16], "this key was retired; give the process the current one"
        )


async def create(ctx: Context, settings: Settings) -> Signer:
    """A new key file at `SKILLREG_SIGNING_KEY_FILE`, registered.

    `StateConflict` if a key is there already (a file, or one from the environment).
    """
    if settings.signing_key is not None:
        raise StateConflict("create a signing key", "a key from SKILLREG_SIGNING_KEY")
    path = Path(settings.signing_key_file)
    signer = Signer.generate()
    try:
        write_key_file(path, signer)
    except FileExistsError:
        raise StateConflict("create a signing key", f"a key file at {path}") from None
    await register(ctx, signer)
    return signer


async def rotate(ctx: Context, settings: Settings) -> tuple[str | None, Signer]:
    """Replace the key file with a new key; the old one is kept beside it and retired.

    Returns the old key's id (None if there was none) and the new signer. Signatures by
    the old key stay verifiable: its public key stays in the database, with the time it
    was retired.
    """
    if settings.signing_key is not None:
        raise StateConflict("rotate the key file", "a key from SKILLREG_SIGNING_KEY")
    path = Path(settings.signing_key_file)
    old = load_signer(settings)
    new = Signer.generate()
    staged = path.with_name(f".{path.name}.{new.key_id[:16]}.new")
    write_key_file(staged, new)
    live = [k.key_id for k in await ctx.read(db_keys.keys) if k.retired_at is None]
    replaces = {*live, *([] if old is None else [old.key_id])}
    endorsement = None if old is None else endorse(new.public, replaces, old.private)
    await register(ctx, new, endorsement)
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
        KeyInfo(
            r.key_id, r.public_key, r.created_at, r.retired_at, r.key_id == current, r.endorsement
        )
        for r in rows
    ]


def public_keys(infos: list[KeyInfo]) -> dict[str, Ed25519PublicKey]:
    """The keys by id, as `attestation.verify` takes them."""
    return {
        i.key_id: Ed25519PublicKey.from_public_bytes(bytes.fromhex(i.public_key)) for i in infos
    }
