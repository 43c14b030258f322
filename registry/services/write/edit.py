"""The owner's edit: a write that names the version it was made from.

An edit is a compare-and-swap on `base_version`. If the head moved meanwhile it fails with
`HeadConflict` and nothing is published; with `keep_draft=True` the draft is first stored as
a (stale) proposal made on `base_version`, so it is not lost, and the error raised is
`DraftKept`, a `HeadConflict` that carries the proposal's id. A successful edit turns the
skill's automatic improvements off unless the caller keeps them on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from registry.domain.approvals import FindingRef
from registry.domain.model import FileInput, Origin, Publication, Scope
from registry.domain.numbers import MAX_VERSION, names_row
from registry.errors import DraftKept, VersionNotFound
from registry.services.context import Context
from registry.services.write.publish import write_package
from registry.services.write.request import ProposalDecision, WriteRequest


async def edit(
    ctx: Context,
    scope: Scope,
    slug: str,
    files: Mapping[str, FileInput],
    *,
    base_version: int,
    actor: str,
    message: str = "",
    sources: Sequence[str] = (),
    keep_auto_improve: bool = False,
    keep_draft: bool = False,
    approve: Sequence[FindingRef] = (),
    decides: ProposalDecision | None = None,
) -> Publication:
    """Publish the owner's edit of `base_version` (see the module docstring)."""
    if not names_row("base_version", base_version, MAX_VERSION):
        raise VersionNotFound(slug, base_version)
    request = WriteRequest(
        scope=scope,
        slug=slug,
        expected_head=base_version,
        origin=Origin.EDIT,
        actor=actor,
        message=message,
        sources=sources,
        keep_auto_improve=keep_auto_improve,
        approve=approve,
        keep_draft=keep_draft,
        decides=decides,
    )
    publication = await write_package(ctx, request, files)
    if publication.proposal is not None:
        raise DraftKept(base_version, publication.version, publication.proposal)
    return publication
