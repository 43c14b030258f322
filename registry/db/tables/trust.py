"""Trust: the keys that sign, and the signed attestation of every version (docs/trust.md).

`signing_keys` holds public keys only, with their validity: a key signs from `created_at`
until it is retired; a retired key's signatures stay verifiable for good. The private key
never enters the database (settings: `SKILLREG_SIGNING_KEY` or its file).

`attestations` holds each version's DSSE envelope, written in the transaction that
publishes the version, with the envelope's SHA-256 (how lock files, indexes and archives
name it) and the package's canonical digest it attests.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from registry.db.tables.base import Base, BigId, hex64_check


class SigningKey(Base):
    """A public key the registry signs with (or did), by its id."""

    __tablename__ = "signing_keys"

    key_id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    public_key: Mapped[str] = mapped_column(sa.String(64))  # hex of the raw 32 bytes
    created_at: Mapped[datetime]
    retired_at: Mapped[datetime | None]
    # The DSSE envelope in which the key this one replaced vouches for it (docs/trust.md,
    # "Key rotation"); null for a registry's first key, or one created after the old was lost.
    endorsement: Mapped[bytes | None] = mapped_column(sa.LargeBinary)

    __table_args__ = (
        sa.CheckConstraint(hex64_check("key_id"), name="key_id_hex"),
        sa.CheckConstraint(hex64_check("public_key"), name="public_key_hex"),
    )


class Attestation(Base):
    """The signed statement of one version: who wrote it, from what, under which key."""

    __tablename__ = "attestations"

    version_id: Mapped[int] = mapped_column(
        BigId, sa.ForeignKey("versions.id", ondelete="CASCADE"), primary_key=True
    )
    workspace: Mapped[str] = mapped_column(sa.String(128))
    key_id: Mapped[str] = mapped_column(sa.ForeignKey("signing_keys.key_id"))
    package_digest: Mapped[str] = mapped_column(sa.String(64))
    digest: Mapped[str] = mapped_column(sa.String(64))  # SHA-256 of `envelope`
    envelope: Mapped[bytes] = mapped_column(sa.LargeBinary)

    __table_args__ = (
        sa.CheckConstraint(hex64_check("package_digest"), name="package_digest_hex"),
        sa.CheckConstraint(hex64_check("digest"), name="digest_hex"),
    )
