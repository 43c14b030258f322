"""fsck: verify the registry end to end and list what GC would reclaim (docs/gc.md, "fsck").

Checks, each a problem with an exact message when it fails:

- every skill's head names an existing version, and every version agrees with its
  manifest (hash, counts, workspace);
- every manifest's rows hash to the manifest's hash, with the recorded counts and sizes;
- every referenced blob's row is `live` and its object exists with the recorded size, or,
  with `verify_content`, reads back and hashes to its digest;
- every `live` row has an object (a later write would deduplicate against it);
- no claim names a missing row.

Orphans (rows no manifest references, and objects without a row) are listed with their
bytes; they are not problems. fsck runs online: it reads in short transactions, and
before it reports a blob problem it looks again, so that a blob a concurrent prune and GC
removed legitimately is not reported.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from blobstore import BlobCorrupted, BlobInfo, BlobNotFound, BlobStoreError
from registry.db import gc as db_gc
from registry.db import integrity as db_integrity
from registry.domain.manifest import Manifest, ManifestEntry
from registry.services.context import Context, blob_store_failed

_REFERENCES: Final = 20


@dataclass(frozen=True)
class Problem:
    """One inconsistency: a stable `kind`, a sentence, and what it concerns."""

    kind: str
    message: str
    digest: str | None = None
    references: tuple[str, ...] = ()


@dataclass(frozen=True)
class Orphan:
    """Something GC reclaims once it is past its grace period and unclaimed.

    `status` is the blob row's, or `untracked` for an object without a row; `bytes` is
    what the store holds (0 when the object was never uploaded).
    """

    digest: str
    status: str
    bytes: int
    stored: bool
    claimed: bool


@dataclass
class FsckReport:
    """The outcome of fsck: problems (none when clean), orphans and what was checked."""

    verify_content: bool
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0
    orphans: list[Orphan] = field(default_factory=list)
    orphan_count: int = 0
    orphan_bytes: int = 0
    skills_checked: int = 0
    versions_checked: int = 0
    manifests_checked: int = 0
    blobs_checked: int = 0
    bytes_checked: int = 0
    store_objects: int = 0
    store_bytes: int = 0
    limit: int = 1000

    @property
    def clean(self) -> bool:
        """True when no problem was found."""
        return self.problem_count == 0

    def problem(self, item: Problem) -> None:
        self.problem_count += 1
        if len(self.problems) < self.limit:
            self.problems.append(item)

    def orphan(self, item: Orphan) -> None:
        self.orphan_count += 1
        self.orphan_bytes += item.bytes
        if len(self.orphans) < self.limit:
            self.orphans.append(item)


@dataclass(frozen=True, slots=True)
class _Probe:
    """What the store says about one object."""

    stored: bool
    size: int = 0
    actual_digest: str | None = None  # set when the bytes hash to something else


async def fsck(ctx: Context, *, verify_content: bool = False, limit: int = 1000) -> FsckReport:
    """Check the registry; `verify_content` reads and hashes every referenced blob."""
    report = FsckReport(verify_content=verify_content, limit=limit)
    try:
        await _check_structure(ctx, report)
        await _check_manifests(ctx, report)
        await _check_blobs(ctx, report)
        await _list_untracked(ctx, report)
    except BlobStoreError as exc:
        raise blob_store_failed(exc) from exc
    return report


async def _check_structure(ctx: Context, report: FsckReport) -> None:
    limit = report.limit

    async def work(conn: AsyncConnection) -> None:
        report.skills_checked, report.versions_checked = await db_integrity.counts(conn)
        for workspace, agent, slug, head in await db_integrity.missing_heads(conn, limit):
            label = db_integrity.version_label(workspace, agent, slug, head)
            report.problem(
                Problem("head_missing", f"skill head {label} names no version", None, (label,))
            )
        for label, what in await db_integrity.version_mismatches(conn, limit):
            report.problem(
                Problem("version_manifest_mismatch", f"version {label} {what}", None, (label,))
            )
        for manifest_id, path, digest, size, blob_size in await db_integrity.entry_size_mismatches(
            conn, limit
        ):
            users = await db_integrity.versions_using(conn, manifest_id, _REFERENCES)
            report.problem(
                Problem(
                    "entry_size_mismatch",
                    f"manifest {manifest_id} lists {path!r} as {size} B, but blob {digest} "
                    f"records {blob_size} B",
                    digest,
                    tuple(users),
                )
            )
        for what in await db_integrity.counter_mismatches(conn, limit):
            report.problem(Problem("usage_counter_mismatch", what))
        for write_id, digest in await db_integrity.dangling_claims(conn, limit):
            report.problem(
                Problem(
                    "dangling_claim",
                    f"write {write_id} claims blob {digest}, which has no row",
                    digest,
                )
            )

    await ctx.read(work)


async def _check_manifests(ctx: Context, report: FsckReport) -> None:
    after, batch = 0, ctx.settings.gc_batch_size
    while True:

        async def page(
            conn: AsyncConnection, after: int = after
        ) -> tuple[list[db_integrity.ManifestRow], list[db_integrity.EntryRow]]:
            manifests = await db_integrity.manifests_after(conn, after, batch)
            await ctx.hit("fsck.manifests_read")
            return manifests, await db_integrity.entries_of(conn, [m.id for m in manifests])

        manifests, entries = await ctx.read(page)
        if not manifests:
            return
        by_manifest: dict[int, list[db_integrity.EntryRow]] = defaultdict(list)
        for entry in entries:
            by_manifest[entry.manifest_id].append(entry)
        for row in manifests:
            report.manifests_checked += 1
            what = _manifest_problem(row, by_manifest[row.id])
            if what is not None:

                async def users(conn: AsyncConnection, manifest_id: int = row.id) -> list[str]:
                    return await db_integrity.versions_using(conn, manifest_id, _REFERENCES)

                report.problem(
                    Problem(
                        "manifest_mismatch",
                        f"manifest {row.id} of workspace {row.workspace}: {what}",
                        None,
                        tuple(await ctx.read(users)),
                    )
                )
        after = manifests[-1].id


def _manifest_problem(
    row: db_integrity.ManifestRow, entries: list[db_integrity.EntryRow]
) -> str | None:
    try:
        manifest = Manifest(ManifestEntry(e.path, e.digest, e.size, e.executable) for e in entries)
    except ValueError as exc:
        return f"its rows do not form a manifest ({exc})"
    if manifest.hash != row.hash:
        return f"its rows hash to {manifest.hash}, the manifest records {row.hash}"
    if (manifest.file_count, manifest.total_size) != (row.file_count, row.total_size):
        return (
            f"its rows hold {manifest.file_count} files / {manifest.total_size} B, the "
            f"manifest records {row.file_count} files / {row.total_size} B"
        )
    return None


async def _check_blobs(ctx: Context, report: FsckReport) -> None:
    after, batch = "", ctx.settings.gc_batch_size
    claims_after = ctx.clock.now()
    gate = asyncio.Semaphore(ctx.settings.gc_delete_concurrency)
    while True:

        async def page(conn: AsyncConnection, after: str = after) -> list[db_integrity.BlobRow]:
            return await db_integrity.blob_rows_after(conn, after, batch, claims_after)

        rows = await ctx.read(page)
        if not rows:
            return

        async def check(row: db_integrity.BlobRow) -> None:
            async with gate:
                await _check_blob(ctx, report, row)

        await asyncio.gather(*(check(row) for row in rows))
        after = rows[-1].digest


async def _probe(ctx: Context, digest: str, *, read: bool) -> _Probe:
    if not read:
        info = await ctx.blobs.stat(digest)
        return _Probe(stored=False) if info is None else _Probe(stored=True, size=info.size)
    try:
        data = await ctx.blobs.get(digest)
    except BlobNotFound:
        return _Probe(stored=False)
    except BlobCorrupted as exc:
        info = await ctx.blobs.stat(digest)
        return _Probe(stored=True, size=0 if info is None else info.size, actual_digest=exc.actual)
    return _Probe(stored=True, size=len(data))


def _blob_problem(row: db_integrity.BlobRow, probe: _Probe) -> tuple[str, str] | None:
    """The problem with a blob row and what the store holds, as (kind, sentence)."""
    if not row.referenced:
        if row.status == "live" and not probe.stored:
            # Not harmless: a later write that finds the row `live` skips the upload.
            return "live_blob_missing", f"blob {row.digest} is 'live' but not in the store"
        return None
    return _referenced_problem(row, probe)


def _referenced_problem(row: db_integrity.BlobRow, probe: _Probe) -> tuple[str, str] | None:
    d = row.digest
    if row.status != "live":
        return "referenced_not_live", f"blob {d} is referenced but its row is {row.status!r}"
    if not probe.stored:
        return "blob_missing", f"blob {d} ({row.size} B) is referenced but not in the store"
    if probe.actual_digest is not None:
        return "blob_corrupted", f"blob {d} is corrupted: its bytes hash to {probe.actual_digest}"
    if probe.size != row.size:
        return (
            "blob_size_mismatch",
            f"blob {d} holds {probe.size} B in the store, its row records {row.size} B",
        )
    return None


async def _check_blob(ctx: Context, report: FsckReport, row: db_integrity.BlobRow) -> None:
    read = report.verify_content and row.referenced
    probe = await _probe(ctx, row.digest, read=read)
    problem = _blob_problem(row, probe)
    if problem is not None:
        # Look again before reporting: a prune and a GC may have removed it meanwhile.
        claims_after = ctx.clock.now()

        async def again(conn: AsyncConnection) -> db_integrity.BlobRow | None:
            return await db_integrity.blob_row(conn, row.digest, claims_after)

        fresh = await ctx.read(again)
        if fresh is None:
            return
        row = fresh
        probe = await _probe(ctx, row.digest, read=report.verify_content and row.referenced)
        problem = _blob_problem(row, probe)
    if problem is not None:

        async def named(conn: AsyncConnection) -> list[str]:
            return await db_integrity.references(conn, row.digest, _REFERENCES)

        refs = tuple(await ctx.read(named))
        kind, sentence = problem
        suffix = f"; referenced by {', '.join(refs)}" if refs else ""
        report.problem(Problem(kind, sentence + suffix, row.digest, refs))
    if row.referenced:
        report.blobs_checked += 1
        report.bytes_checked += probe.size
    else:
        report.orphan(Orphan(row.digest, row.status, probe.size, probe.stored, row.claimed))


async def _list_untracked(ctx: Context, report: FsckReport) -> None:
    page: list[BlobInfo] = []

    async def flush(infos: list[BlobInfo]) -> None:
        digests = [i.digest for i in infos]

        async def known(conn: AsyncConnection) -> set[str]:
            return await db_gc.tracked(conn, digests)

        have_rows = await ctx.read(known)
        for info in infos:
            if info.digest not in have_rows:
                report.orphan(
                    Orphan(info.digest, "untracked", info.size, stored=True, claimed=False)
                )

    async for info in ctx.blobs.iter_digests():
        report.store_objects += 1
        report.store_bytes += info.size
        page.append(info)
        if len(page) >= ctx.settings.gc_batch_size:
            await flush(page)
            page = []
    if page:
        await flush(page)
