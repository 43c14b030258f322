"""The content check as the services run it: cached per digest, under approvals.

Digests the current scanner found clean are remembered (`scan_results`, keyed by digest and
scanner fingerprint) and not scanned again; a file with findings is never cached, so every
check sees its findings and matches them against approvals exactly (domain/approvals.py).

A package read back from storage (a restore, an applied proposal, a state query) is checked
the same way: its bytes are fetched only for digests not cached clean.

Where the scan runs: on the event loop up to `SCAN_INLINE_BYTES` to scan, in a worker thread
above. `DefaultScanner` works in short calls, so the thread hands the GIL back to the loop
every few milliseconds, whatever the files hold (docs/write-path.md, "The content check and
the event loop"; tests/write/test_content_lag.py holds it to 100 ms).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import approvals as db_approvals
from registry.db import scans as db_scans
from registry.db import skills as db_skills
from registry.domain.approvals import Approval, FindingRef, Verdict, evaluate
from registry.domain.manifest import Manifest
from registry.domain.model import PackageFile, Scope
from registry.domain.scanner import Finding, Scanner
from registry.errors import ContentBlocked
from registry.services.context import Context, offloaded_above
from registry.services.read import Vanished, read_files

SCAN_INLINE_BYTES: Final = 64 * 1024
"""Up to this many bytes to scan, the check runs on the event loop; above, in a worker thread.

A common package (ten files of a few KiB) scans in less time than a trip to a worker
thread would add to it, and the slowest input of this size (a file crafted against the
assignment pattern) stays far within the bound on the loop's stalls (the figures:
docs/write-path.md, "What runs where")."""


async def approvals_of(
    ctx: Context, scope: Scope, slug: str, version: int | None
) -> tuple[Approval, ...]:
    """The approvals stored with `version` (None: the head) of the live skill, or ()."""

    async def work(conn: AsyncConnection) -> tuple[Approval, ...]:
        skill = await db_skills.live_skill(conn, scope, slug)
        if skill is None:
            return ()
        row = await db_skills.version(conn, skill, skill.head if version is None else version)
        if row is None:
            return ()
        return await db_approvals.for_version(conn, scope.workspace, row.id)

    return await ctx.read(work)


async def _clean_digests(ctx: Context, digests: Iterable[str]) -> set[str]:
    fingerprint = ctx.scanner.fingerprint
    return await ctx.read(lambda conn: db_scans.clean_among(conn, digests, fingerprint))


async def remember_clean(ctx: Context, digests: Sequence[str], workspace: str) -> None:
    """Record digests found clean, in a transaction of their own."""
    if not digests:
        return
    fingerprint, now = ctx.scanner.fingerprint, ctx.clock.now()
    await ctx.write(
        lambda conn: db_scans.remember_clean(conn, digests, fingerprint, now),
        workspace=workspace,
    )


METADATA_PREFIX: Final = "meta:"
"""A finding in metadata is reported at `meta:<field>` (`meta:message`, `meta:sources/2`)
where a file's finding names the file's path."""


def version_metadata(message: str, sources: Sequence[str]) -> list[tuple[str, str]]:
    """The metadata a version stores and its history returns, as (field, text) pairs."""
    return [("message", message)] + [
        (f"sources/{n}", source) for n, source in enumerate(sources, start=1)
    ]


def check_metadata(scanner: Scanner, fields: Iterable[tuple[str, str]]) -> None:
    """Refuse metadata holding a credential-like value, as a file holding one is refused.

    Metadata is stored and handed back (a version's message and sources by its history),
    so it gets the same check as files: a finding raises `ContentBlocked` naming the field
    (`METADATA_PREFIX`), never the value. No approval covers metadata: a credential has no
    reason to be there. Empty fields are not scanned; an ordinary message or source costs
    one `scan` call.
    """
    for name, text in fields:
        if not text:
            continue
        path = METADATA_PREFIX + name
        findings = scanner.scan(path, text.encode("utf-8", "surrogatepass"))
        if findings:
            first = findings[0]
            raise ContentBlocked(path, first.pattern_class, first.ordinal)


async def blob_findings(ctx: Context, digest: str, data: bytes) -> list[Finding]:
    """The findings in one blob's bytes; none, without scanning, if it scanned clean before.

    The caller remembers a clean result (`db.scans.remember_clean`) in its own transaction.
    """
    if await _clean_digests(ctx, [digest]):
        return []
    return await offloaded_above(SCAN_INLINE_BYTES, len(data), ctx.scanner.scan, digest, data)


async def package_findings(
    ctx: Context, manifest: Manifest, *, vanished: Vanished | None = None
) -> tuple[list[Finding], tuple[str, ...]]:
    """Every finding in `manifest`'s files under the current rules, approvals aside.

    What a rescan needs (history/rescan.py): the findings themselves, to weigh against
    each version's own approvals, and the digests this call scanned and found clean, which
    the caller remembers (`db.scans.remember_clean`) in its own transaction. Digests
    cached clean are not read.
    """
    clean = await _clean_digests(ctx, (e.digest for e in manifest.entries))
    todo = [e for e in manifest.entries if e.digest not in clean]
    if not todo:
        return [], ()
    files = await read_files(ctx, Manifest(todo), vanished=vanished)
    data = {e.path: files[e.path].data for e in todo}

    def scan_all() -> list[Finding]:
        return [f for path, content in data.items() for f in ctx.scanner.scan(path, content)]

    size = sum(len(d) for d in data.values())
    findings = await offloaded_above(SCAN_INLINE_BYTES, size, scan_all)
    paths = {f.path for f in findings}
    dirty = {e.digest for e in todo if e.path in paths}
    return findings, tuple(sorted({e.digest for e in todo} - dirty))


Inherited = Iterable[Approval] | Callable[[], Awaitable[Iterable[Approval]]]
"""Approvals, or a function that loads them: called only if the scan finds something, so
a clean package (the common case) costs no extra query."""


async def verdict(
    ctx: Context,
    manifest: Manifest,
    files: Mapping[str, PackageFile] | None,
    *,
    allowed: Inherited = (),
    approve: Iterable[FindingRef] = (),
    workspace: str = "",
    remember: bool = True,
    clean: set[str] | None = None,
    vanished: Vanished | None = None,
) -> Verdict:
    """Check `manifest`'s files (`files`, or fetched from the blob store if None).

    Digests that scan clean are remembered only when nothing blocks, so a refused write
    leaves no trace beyond its error. With `remember=False` the caller records
    `Verdict.fresh` itself (the write path does it in its claim transaction, which saves
    a commit). `clean`, if given, are the digests already known to be clean (the write
    path reads them together with the head). `vanished`: see `read.read_files`.
    """
    if clean is None:
        clean = await _clean_digests(ctx, (e.digest for e in manifest.entries))
    todo = [e for e in manifest.entries if e.digest not in clean]
    if files is None and todo:
        files = await read_files(ctx, Manifest(todo), vanished=vanished)
    data = {e.path: files[e.path].data for e in todo} if files is not None else {}

    def scan_all() -> list[Finding]:
        findings: list[Finding] = []
        for path, content in data.items():
            findings.extend(ctx.scanner.scan(path, content))
        return findings

    size = sum(len(d) for d in data.values())
    findings = await offloaded_above(SCAN_INLINE_BYTES, size, scan_all)
    if findings and callable(allowed):
        allowed = await allowed()
    result = evaluate(findings, () if callable(allowed) else allowed, approve)
    if result.blocked is None:
        paths = {f.path for f in findings}
        dirty = {e.digest for e in todo if e.path in paths}
        fresh = tuple(sorted({e.digest for e in todo} - dirty))
        result = replace(result, fresh=fresh)
        if remember:
            await remember_clean(ctx, fresh, workspace)
    return result


async def check(
    ctx: Context,
    manifest: Manifest,
    files: Mapping[str, PackageFile] | None,
    *,
    allowed: Inherited = (),
    approve: Iterable[FindingRef] = (),
    workspace: str = "",
    vanished: Vanished | None = None,
) -> tuple[Approval, ...]:
    """`verdict(...)`, raising `ContentBlocked` if anything blocks; returns the kept approvals."""
    result = await verdict(
        ctx,
        manifest,
        files,
        allowed=allowed,
        approve=approve,
        workspace=workspace,
        vanished=vanished,
    )
    if result.blocked is not None:
        raise result.blocked
    return result.kept
