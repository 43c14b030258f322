"""Signed desired states: what the registry tells a syncing host, under its key.

    epoch     the signing period a moment falls in: a quarter of the state's validity
              (`SKILLREG_STATE_VALIDITY`), so a host always receives a state with at
              least three quarters of its validity left
    sign      the state of one scope as `desired.serve` read it, signed: its sequence
              number (the workspace's newest event, targets' own left out:
              `desired.TARGET_EVENTS`), when it was issued, when it expires (the end of
              its period plus the validity), and every skill with its head, package
              digest and attestation digest (docs/trust.md)

The tag of a signed state covers the period, so a host that polls gets a fresh signature
once per period while nothing changes, and a 304 in between.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from registry.domain.attestation import package_digest
from registry.domain.signed_state import Freshness, StateEntry, sign_state, state_document
from registry.services.context import Context
from registry.services.materialize.desired import Served
from registry.services.materialize.source import Head
from registry.services.trust.attest import ready


def period(ctx: Context) -> timedelta:
    return timedelta(seconds=ctx.settings.state_validity / 4)


def epoch(ctx: Context, now: datetime) -> int:
    """The signing period `now` falls in."""
    return int(now.timestamp() // period(ctx).total_seconds())


def sign(ctx: Context, served: Served, now: datetime, at_epoch: int) -> bytes:
    """The signed state (DSSE envelope) of what `served` holds, issued at `now`.

    `SigningKeyUnavailable` if the registry has no key: a host takes no unsigned state.
    """
    signer = ready(ctx)
    start = datetime.fromtimestamp(at_epoch * period(ctx).total_seconds(), UTC)
    expires = start + timedelta(seconds=ctx.settings.state_validity)
    entries = [_entry(h, served.attestations.get(h.skill_id or 0)) for h in served.heads]
    scope = served.scope
    freshness = Freshness(served.seq, now)
    keys = {signer.key_id: signer.public_key_hex(), **served.keys}
    document = state_document(
        scope.workspace, scope.agent, freshness, expires, entries, keys=keys, revoked=served.revoked
    )
    return sign_state(document, signer.private)


def _entry(head: Head, attested: tuple[str, str] | None) -> StateEntry:
    """A head as the signed state lists it.

    Its package digest is the one its attestation names, computed from the manifest for a
    version published before versions were signed.
    """
    digest = None
    if head.manifest is not None:
        digest = attested[1] if attested is not None else package_digest(head.manifest)
    return StateEntry(
        slug=head.slug,
        state=head.state,
        use_paused=head.use_paused,
        version=head.version,
        manifest_hash=head.manifest_hash,
        package_digest=digest,
        attestation=None if attested is None else attested[0],
    )
