"""Diff: what changed between two versions of a skill, or a version and a proposal.

Files are compared by manifest entry (digest, size, executable bit); only the files that
differ are fetched from the blob store (digests verified), and only text files are diffed
line by line. Each text file gets a bounded preview (`PREVIEW_LINES` lines of unified diff,
`truncated` when cut) or, with `full=True`, its whole unified diff.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import proposals as db_proposals
from registry.db import skills as db_skills
from registry.domain.manifest import Manifest, ManifestEntry
from registry.domain.model import ArchivedVersion, Scope, check_slug
from registry.domain.numbers import MAX_ID, names_row
from registry.domain.textdiff import PREVIEW_LINES, is_text, unified
from registry.errors import ProposalNotFound
from registry.services.context import Context
from registry.services.read import locate, read_files


@dataclass(frozen=True, slots=True)
class ProposalRef:
    """Names a proposal as one side of a diff."""

    id: int


DiffTarget = int | ProposalRef | ArchivedVersion
"""A version number of the live skill, a proposal, or a version of a deleted skill."""


@dataclass(frozen=True)
class DiffSide:
    """One side of a diff: a version or a proposal, and its package's manifest hash."""

    kind: Literal["version", "proposal"]
    id: int
    manifest_hash: str
    # The deleted skill a version belongs to (an `ArchivedVersion` side); None: the live one.
    archived_skill: int | None = None

    @property
    def label(self) -> str:
        if self.kind == "proposal":
            return f"proposal {self.id}"
        if self.archived_skill is not None:
            return f"v{self.id} of deleted skill {self.archived_skill}"
        return f"v{self.id}"


@dataclass(frozen=True)
class FileChange:
    """A file that differs between the two sides.

    `binary` files get no line diff. `lines` is the preview (or, for a full diff, the whole
    unified diff without its `---`/`+++` header); `truncated` says it was cut and `omitted`
    how many lines were left out. A mode-only change has no lines.
    """

    path: str
    status: Literal["added", "changed", "removed"]
    old_digest: str | None
    new_digest: str | None
    old_size: int | None
    new_size: int | None
    old_executable: bool | None
    new_executable: bool | None
    binary: bool
    lines: list[str]
    truncated: bool
    omitted: int


@dataclass(frozen=True)
class PackageDiff:
    """Every file that differs from `a` to `b`, in canonical path order."""

    slug: str
    a: DiffSide
    b: DiffSide
    files: list[FileChange]
    full: bool

    def count(self, status: str) -> int:
        return sum(1 for f in self.files if f.status == status)

    @property
    def identical(self) -> bool:
        return not self.files


async def _side(
    conn: AsyncConnection, scope: Scope, slug: str, target: DiffTarget
) -> tuple[DiffSide, Manifest]:
    if isinstance(target, ProposalRef):
        stored = names_row("proposal", target.id, MAX_ID)
        skill, _ = await locate(conn, scope, slug, None)
        proposal = await db_proposals.get(conn, scope, target.id) if stored else None
        if proposal is None or proposal.skill_id != skill.id:
            raise ProposalNotFound(target.id)
        manifest = await db_skills.manifest_entries(conn, scope.workspace, proposal.manifest_id)
        return DiffSide("proposal", proposal.id, manifest.hash), manifest
    skill, row = await locate(conn, scope, slug, target)
    manifest = await db_skills.manifest_entries(conn, scope.workspace, row.manifest_id)
    archived = skill.id if isinstance(target, ArchivedVersion) else None
    return DiffSide("version", row.number, manifest.hash, archived), manifest


async def diff(
    ctx: Context,
    scope: Scope,
    slug: str,
    a: DiffTarget,
    b: DiffTarget,
    *,
    full: bool = False,
    preview_lines: int = PREVIEW_LINES,
) -> PackageDiff:
    """The diff from `a` to `b`, each a `DiffTarget` (an archived version pairs with any)."""
    check_slug(slug)

    async def work(conn: AsyncConnection) -> tuple[DiffSide, Manifest, DiffSide, Manifest]:
        side_a, old = await _side(conn, scope, slug, a)
        side_b, new = await _side(conn, scope, slug, b)
        return side_a, old, side_b, new

    side_a, old, side_b, new = await ctx.read(work)
    files = await diff_manifests(ctx, old, new, full=full, preview_lines=preview_lines)
    return PackageDiff(slug, side_a, side_b, files, full)


async def diff_manifests(
    ctx: Context,
    old: Manifest,
    new: Manifest,
    *,
    full: bool = False,
    preview_lines: int = PREVIEW_LINES,
) -> list[FileChange]:
    """The file changes from `old` to `new`, fetching only the blobs that differ."""
    changes = old.diff(new)
    touched = [old[p] for p in changes.changed + changes.removed] + [
        new[p] for p in changes.changed + changes.added
    ]
    unique = {e.digest: e for e in touched}
    # Keyed by digest, so a manifest over the distinct blobs (paths only need be unique).
    fetched = await read_files(
        ctx, Manifest(ManifestEntry(d, d, e.size) for d, e in unique.items())
    )
    data = {d: f.data for d, f in fetched.items()}
    limit = None if full else preview_lines
    out: list[FileChange] = []
    for path in sorted(
        changes.added + changes.changed + changes.removed, key=lambda p: p.encode("utf-8")
    ):
        before, after = old.get(path), new.get(path)
        old_bytes = None if before is None else data[before.digest]
        new_bytes = None if after is None else data[after.digest]
        binary = not all(is_text(b) for b in (old_bytes, new_bytes) if b is not None)
        text = None if binary else unified(old_bytes, new_bytes, limit=limit)
        status: Literal["added", "changed", "removed"] = (
            "added" if before is None else "removed" if after is None else "changed"
        )
        out.append(
            FileChange(
                path=path,
                status=status,
                old_digest=None if before is None else before.digest,
                new_digest=None if after is None else after.digest,
                old_size=None if before is None else before.size,
                new_size=None if after is None else after.size,
                old_executable=None if before is None else before.executable,
                new_executable=None if after is None else after.executable,
                binary=binary,
                lines=[] if text is None else list(text.lines),
                truncated=text is not None and text.truncated,
                omitted=0 if text is None else text.omitted,
            )
        )
    return out
