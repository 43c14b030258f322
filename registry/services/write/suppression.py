"""What an owner's restore or delete undoes, as a suppression records it (docs/history.md).

Both read the files they compare before any lock is taken: only text files up to
`MAX_SKETCH_BYTES` are read, to sketch them (`registry/domain/similarity.py`). The caller
records the change under the workspace lock, after checking that the head it read is
still the head. Nothing holds the blobs between the read of the manifests and the read
of the files: a write may move the head, retention prune the versions and GC delete
their blobs meanwhile. A blob not found is therefore checked against a fresh snapshot
(the caller's `vanished`): a version or head that is gone is the caller's documented
error (`VersionNotFound`, `HeadConflict`), and only a blob missing from a version that is
still there is `Inconsistency`.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import skills as db_skills
from registry.domain.manifest import Manifest
from registry.domain.model import Scope
from registry.domain.similarity import MAX_SKETCH_BYTES, ChangedFile, Sketch, sketch
from registry.services.context import Context
from registry.services.read import Vanished, read_files


async def _sketches(
    ctx: Context, manifest: Manifest, paths: set[str], vanished: Vanished | None
) -> dict[str, Sketch | None]:
    wanted = Manifest(e for e in manifest.entries if e.path in paths and e.size <= MAX_SKETCH_BYTES)
    files = await read_files(ctx, wanted, vanished=vanished)
    return {path: sketch(f.data) for path, f in files.items()}


async def undone_change(
    ctx: Context, head: Manifest, kept: Manifest, *, vanished: Vanished | None = None
) -> tuple[ChangedFile, ...]:
    """The change from `kept` (the version restored) to `head` (the version undone).

    Files the head added or changed, with their digests and the sketches of both texts,
    and files the head removed (digest None).
    """
    diff = kept.diff(head)
    touched = set(diff.added) | set(diff.changed)
    undone = await _sketches(ctx, head, touched, vanished)
    before = await _sketches(ctx, kept, set(diff.changed), vanished)
    digests = {e.path: e.digest for e in head.entries}
    out = [
        ChangedFile(path, digests[path], undone.get(path), before.get(path))
        for path in sorted(touched)
    ]
    out += [ChangedFile(path, None) for path in sorted(diff.removed)]
    return tuple(sorted(out, key=lambda f: f.path))


async def whole_package(
    ctx: Context, head: Manifest, *, vanished: Vanished | None = None
) -> tuple[ChangedFile, ...]:
    """Every file of a deleted skill's head, as the change its delete undoes."""
    undone = await _sketches(ctx, head, {e.path for e in head.entries}, vanished)
    return tuple(ChangedFile(e.path, e.digest, undone.get(e.path)) for e in head.entries)


async def head_manifest(ctx: Context, scope: Scope, slug: str) -> tuple[int, Manifest] | None:
    """The live skill's head number and manifest (None if there is no live skill)."""

    async def work(conn: AsyncConnection) -> tuple[int, Manifest] | None:
        skill = await db_skills.live_skill(conn, scope, slug)
        if skill is None:
            return None
        row = await db_skills.version(conn, skill, skill.head)
        assert row is not None
        return skill.head, await db_skills.manifest_entries(conn, scope.workspace, row.manifest_id)

    found = await ctx.read(work)
    await ctx.hit("undo.head_read")
    return found
