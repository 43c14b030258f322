"""Reconcile: make a target directory equal to a scope's desired state, and repair drift.

Desired state: the head manifest of every skill of the scope that is in use (state
`active`, use not paused), or the versions a lock file pins. Applied state: what the
registry recorded per target and skill (`materializations`), and what the target's own
stat cache says it wrote. For each skill the reconciler looks at the disk first:

    disk holds the desired package        -> record it if the record is stale; else nothing
    disk holds what was last written      -> pending: write the desired package
    a write of ours was interrupted       -> complete it (never reported, never adopted)
    anything else                         -> drift: restore the desired package from the
                                             blob store, or with `adopt` publish the disk's
                                             package as a new version (origin out_of_band,
                                             compare-and-swap on the applied version)
    not desired (deleted, paused, unpinned) -> remove it from the target

Every change is written package-atomically (`swap`) and then recorded with one outbox
event. A skill that fails is reported with its reason and recorded as failed; the others go
on. One reconciler works on a target at a time (`target`). Drift is found by `drift`.

Skills are independent: a few are worked on at once (`SKILLS_AT_ONCE`), each through the
same steps in the same order (look, intent, build, swap, cache, record, retire). What
they touch on disk is their own (`<slug>`, its trees, its cache file, its trash entries),
so the steps of two skills never meet; overlapping them spends one skill's waits (an
fsync, a blob read, the record's commit, a round trip to the registry) on the others.

The desired state, the blobs and the records come from a `Source` (`source.py`): the
engine here (`materialize`) is the same for both of them. `reconcile` reads the database and
the blob store (`direct.py`); `skillreg sync` speaks the registry's HTTP API and keeps a
local blob cache (`registry.client`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, TypeVar

from blobstore import BlobStoreError
from registry.db import materializations as db_materializations
from registry.domain.limits import Limits
from registry.domain.manifest import Manifest
from registry.domain.model import PackageFile, Scope, check_slug
from registry.domain.package import check_manifest
from registry.errors import (
    EntryInTheWay,
    Inconsistency,
    InvalidName,
    LockFileInvalid,
    NotInUse,
    RegistryError,
    StorageUnavailable,
)
from registry.failpoints import NO_FAILPOINTS, Failpoints
from registry.services.context import Context, blob_store_failed
from registry.services.fsops import Step, no_step
from registry.services.materialize import drift, swap
from registry.services.materialize.direct import DirectSource
from registry.services.materialize.drift import DIR, LINK, DriftItem, Observation
from registry.services.materialize.lockfile import LockFile
from registry.services.materialize.records import Records
from registry.services.materialize.report import (
    ADOPTED,
    FAILED,
    REMOVED,
    REPAIRED,
    UNCHANGED,
    WRITTEN,
    ReconcileReport,
    SkillOutcome,
)
from registry.services.materialize.source import (
    Adopter,
    Applied,
    Desired,
    Place,
    Source,
    Want,
    block_collisions,
)
from registry.services.materialize.target import SkillCache, Target
from registry.services.materialize.threads import in_pool, open_target, thread_pool

T = TypeVar("T")

SKILLS_AT_ONCE: Final = 8
"""How many skills one run materialises at the same time.

Enough to keep the disk's queue busy: concurrent fsyncs share the filesystem's journal
commits (docs/benchmarks.md, section 9, has the figures), and a record's commit or a
blob read of one skill overlaps the others' writes. The cost is memory: at most this many
packages' bytes are held at once.
"""


async def reconcile(
    ctx: Context,
    scope: Scope,
    path: Path | str,
    *,
    mode: str | None = None,
    adopt: bool = False,
    verify: bool = False,
    lock: LockFile | None = None,
    wait: bool = False,
    actor: str = "reconciler",
    create: bool = False,
) -> ReconcileReport:
    """Make the target at `path` hold the desired state of `scope` (see the module docstring).

    `mode` (`link` or `copy`) is fixed when a target is first used; `verify` rehashes
    every file instead of trusting the stat cache; `lock` pins the versions; `wait` waits
    for another reconciler instead of raising `TargetBusy`. A scope with no skill, no
    history and no target is refused (`ScopeNotFound`, a misspelt name most likely: a
    target is bound to its scope for good) unless `create`.
    """
    if lock is not None and adopt:
        raise LockFileInvalid(
            "adopt_with_lock", "a lock file pins versions; adopting would change them"
        )
    bind = create or await ctx.read(lambda conn: db_materializations.scope_known(conn, scope))
    source = DirectSource(ctx, scope)
    return await materialize(
        source,
        scope,
        path,
        mode=mode,
        verify=verify,
        lock=lock,
        wait=wait,
        failpoints=ctx.failpoints,
        adopter=source if adopt else None,
        actor=actor,
        bind=bind,
        limits=ctx.limits,
    )


async def materialize(
    source: Source,
    scope: Scope,
    path: Path | str,
    *,
    mode: str | None = None,
    verify: bool = False,
    lock: LockFile | None = None,
    wait: bool = False,
    failpoints: Failpoints = NO_FAILPOINTS,
    adopter: Adopter | None = None,
    actor: str = "reconciler",
    bind: bool = True,
    limits: Limits | None = None,
    run_deadline: float | None = None,
) -> ReconcileReport:
    """The engine: make the target at `path` hold the desired state `source` gives for `scope`.

    `reconcile` and `sync` are this with their own source; `adopter` (if any) publishes
    drift instead of repairing it; `bind=False` refuses to bind a new target to `scope`
    (`ScopeNotFound`). Every slug and every package written passes the registry's rules
    again, within `limits` (defence in depth: `registry/client/admission.py` says
    why). `run_deadline` (seconds) bounds the run once the target is locked: past it,
    the filesystem step in flight finishes (old or new package, never a mix) and
    `RunTimeout` is raised.
    """
    if lock is not None:
        lock.check_scope(scope)
    step = _step_hook(failpoints)
    target = await open_target(failpoints, path, scope, mode=mode, wait=wait, bind=bind)
    run = _Run(
        source,
        scope,
        target,
        step,
        failpoints,
        adopter=adopter,
        verify=verify,
        actor=actor,
        limits=limits or Limits(),
    )
    deadline = asyncio.timeout(run_deadline)
    try:
        async with deadline:
            return await run.run(lock)
    except TimeoutError:
        if run_deadline is None or not deadline.expired():
            raise
        raise RunTimeout(run_deadline) from None
    finally:
        run.close_when_idle()


class RunTimeout(TimeoutError):
    """A run passed the deadline `materialize` was given.

    The skills it had not reached keep what they held.
    """

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the run did not finish within {seconds:g}s")
        self.seconds = seconds


def _step_hook(failpoints: Failpoints) -> Step:
    """Failpoints for the filesystem steps, which run in worker threads.

    The hook hands each step to the event loop's failpoints and waits for it, so a test can
    fail, park or kill the reconciler at any step. Production has no failpoints: no hop.
    """
    if failpoints is NO_FAILPOINTS:
        return no_step
    loop = asyncio.get_running_loop()

    def step(name: str) -> None:
        asyncio.run_coroutine_threadsafe(failpoints.hit(name), loop).result()

    return step


class _Run:
    """One reconcile of one target: its inputs, and the records it updates as it goes."""

    def __init__(
        self,
        source: Source,
        scope: Scope,
        target: Target,
        step: Step,
        failpoints: Failpoints,
        *,
        adopter: Adopter | None,
        verify: bool,
        actor: str,
        limits: Limits,
    ) -> None:
        self.source = source
        self.limits = limits
        self.scope = scope
        self.target = target
        self.step = step
        self.hit = failpoints.hit
        self.adopter = adopter
        self.verify = verify
        self.actor = actor
        self.records = Records(source, {})
        self.hashed = 0
        self.entry = LINK if target.mode == "link" else DIR
        self._inflight: set[asyncio.Future[Any]] = set()
        self._pool = thread_pool(SKILLS_AT_ONCE)

    async def blocking(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run filesystem work on the target in a worker thread.

        A cancelled reconcile does not stop the thread; the work is shielded so that it
        finishes, and the target's descriptors stay open until it has (see
        `close_when_idle`): closing them under a running thread would let it act on
        whatever file a reused descriptor number names next.
        """
        future = in_pool(self._pool, fn, *args, **kwargs)
        self._inflight.add(future)
        future.add_done_callback(self._inflight.discard)
        return await asyncio.shield(future)

    def close_when_idle(self) -> None:
        """Close the target now, or when the filesystem work still running has finished."""
        self._pool.shutdown(wait=False)  # its threads end once the work queued has run
        busy = [f for f in self._inflight if not f.done()]
        if not busy:
            self.target.close()
            return
        left = len(busy)

        def finished(_: asyncio.Future[Any]) -> None:
            nonlocal left
            left -= 1
            if not left:
                self.target.close()

        for future in busy:
            future.add_done_callback(finished)

    async def run(self, lock: LockFile | None) -> ReconcileReport:
        await self.hit("reconcile.locked")
        snapshot = await self.source.begin(self.target, lock)
        refused = list(snapshot.refused)
        wanted = block_collisions(snapshot.desired)
        self.records = Records(self.source, snapshot.applied)
        recorded = {s for s, r in snapshot.applied.items() if r.manifest_hash is not None}
        slugs = {*wanted.wants, *wanted.blocked, *recorded, *self.target.cached_slugs()}
        todo: list[str] = []
        for slug in sorted(slugs):
            try:
                check_slug(slug)
            except InvalidName as exc:
                refused.append(exc)  # nothing is done under a name that is no slug
                continue
            todo.append(slug)
        done = await self._each(todo, wanted)
        await self.blocking(self.target.sync_cache)  # the results `save_result` left
        outcomes = [o for slug in todo if (o := done.get(slug)) is not None]
        await self.source.finish(wanted)
        return ReconcileReport(
            target=str(self.target.path),
            target_id=self.target.target_id,
            mode=self.target.mode,
            workspace=self.scope.workspace,
            agent=self.scope.agent,
            outcomes=tuple(outcomes),
            refused=tuple(refused),
            swept=self.target.swept,
            hashed=self.hashed,
            fetched=self.source.fetched,
        )

    async def _each(self, slugs: list[str], wanted: Desired) -> dict[str, SkillOutcome | None]:
        """Converge every slug, `SKILLS_AT_ONCE` at a time; the outcome of each.

        A few workers take the slugs in order. An error that is no skill's failure (a
        cancellation, the run's deadline, a bug) stops the workers; each lets the
        filesystem step it is in finish (`blocking`), as one skill at a time did.
        """
        outcomes: dict[str, SkillOutcome | None] = {}
        queue = iter(slugs)

        async def worker() -> None:
            for slug in queue:  # one iterator for all: each slug is taken once
                want, blocked = wanted.wants.get(slug), wanted.blocked.get(slug)
                outcomes[slug] = await self._one(slug, want, blocked)

        workers = [asyncio.ensure_future(worker()) for _ in range(min(SKILLS_AT_ONCE, len(slugs)))]
        if not workers:
            return outcomes
        try:
            await asyncio.gather(*workers)
        finally:
            # Not a `TaskGroup` (`registry/client/remote.py`'s `_all` says why).
            for task in workers:
                task.cancel()
            await asyncio.wait(workers)
            for task in workers:
                if not task.cancelled():
                    task.exception()  # retrieved: the first one is what gather raised
        return outcomes

    # ------------------------------------------------------------ one skill

    async def _one(
        self, slug: str, want: Want | None, blocked: RegistryError | None
    ) -> SkillOutcome | None:
        row = self.records.rows.get(slug)
        try:
            if blocked is not None and not isinstance(blocked, NotInUse):
                raise blocked
            cache, seen = await self.blocking(self._look, slug)
            self.hashed += seen.hashed
            if want is None:
                removed = await self._remove(slug, row, cache, seen)
                if blocked is not None:
                    raise blocked
                return removed
            return await self._converge(slug, want, row, cache, seen)
        except (RegistryError, OSError, BlobStoreError) as exc:
            error = exc if isinstance(exc, RegistryError) else _as_registry_error(exc)
            await self.records.failed(slug, error)
            return SkillOutcome(
                slug,
                FAILED,
                version=None if row is None else row.version,
                manifest_hash=None if row is None else row.manifest_hash,
                previous_hash=None if row is None else row.manifest_hash,
                reason=str(error),
                error_code=error.code,
                error=error,
            )

    def _look(self, slug: str) -> tuple[SkillCache | None, Observation]:
        cache = self.target.load_cache(slug)
        return cache, drift.observe(self.target, slug, cache, verify=self.verify)

    async def _converge(
        self,
        slug: str,
        want: Want,
        row: Applied | None,
        cache: SkillCache | None,
        seen: Observation,
    ) -> SkillOutcome:
        previous = None if row is None else row.manifest_hash
        owned = self._owned(cache, seen, recorded=previous is not None)
        if seen.entry != drift.ABSENT and not owned:
            raise EntryInTheWay(str(self.target.path / slug), _describe(seen))
        if seen.holds(want.manifest_hash, self.entry):
            return await self._settle(slug, want, row, cache, seen)
        interrupted = cache is not None and cache.writing is not None
        expected = cache.manifest() if cache is not None and cache.manifest_hash else None
        if interrupted or (seen.entry == drift.ABSENT and not owned):
            found: list[DriftItem] = []
        elif self._clean(seen, expected, previous):
            found = []
        else:
            found = drift.differences(
                expected or await self.source.manifest(want), seen, self.entry
            )
        if found and self.adopter is not None and seen.walked and not interrupted:
            return await self._adopt(
                slug, want, row=row, cache=cache, seen=seen, found=tuple(found)
            )
        action = REPAIRED if found else WRITTEN
        return await self._write(
            slug, want, row=row, cache=cache, seen=seen, action=action, found=tuple(found)
        )

    def _owned(self, cache: SkillCache | None, seen: Observation, *, recorded: bool) -> bool:
        """Whether `<target>/<slug>` is the reconciler's to replace or remove.

        The target's own cache or a link in its own format says so; a record says so only
        when the source's records are the registry's own (`records_prove_ownership`).
        """
        proven = recorded and self.source.records_prove_ownership
        return cache is not None or seen.reconciler_made or proven

    def _clean(self, seen: Observation, expected: Manifest | None, previous: str | None) -> bool:
        """The disk holds what was last written here: only the new version is missing."""
        if seen.entry != self.entry or seen.anomalies or seen.extra_dirs():
            return False
        if expected is not None:
            return seen.manifest == expected
        return previous is not None and seen.manifest.hash == previous

    async def _settle(
        self,
        slug: str,
        want: Want,
        row: Applied | None,
        cache: SkillCache | None,
        seen: Observation,
    ) -> SkillOutcome:
        """The disk already holds the desired package: bring the records up to date."""
        fresh = SkillCache(slug, want.manifest_hash, want.version, seen.tree, None, seen.files)
        if cache != fresh:
            await self.blocking(self.target.save_cache, fresh)
        previous = None if row is None else row.manifest_hash
        action = WRITTEN if previous != want.manifest_hash else UNCHANGED
        await self.records.applied(
            slug, manifest_hash=want.manifest_hash, version=want.version, action=action, found=()
        )
        return SkillOutcome(slug, action, want.version, want.manifest_hash, previous)

    async def _write(
        self,
        slug: str,
        want: Want,
        *,
        row: Applied | None,
        cache: SkillCache | None,
        seen: Observation,
        action: str,
        found: tuple[DriftItem, ...],
    ) -> SkillOutcome:
        manifest = await self.source.manifest(want)
        check_manifest(slug, manifest, self.limits)  # before any byte of it is fetched or written
        how = swap.plan(self.target.mode, manifest, seen)
        fetch = set(how.fetch)
        files = await self.source.files(Manifest(e for e in manifest if e.path in fetch))
        intent = (
            replace(cache, writing=want.manifest_hash)
            if cache is not None
            else SkillCache(slug, None, None, writing=want.manifest_hash)
        )
        written = await self.blocking(
            self._write_on_disk, intent, want, manifest=manifest, files=files, seen=seen, how=how
        )
        await self.records.applied(
            slug, manifest_hash=want.manifest_hash, version=want.version, action=action, found=found
        )
        await self.hit("reconcile.recorded")
        if written.retire:
            await self.blocking(self.target.remove_unlinked_trees, slug, step=self.step)
        await self.hit("reconcile.skill_done")
        previous = None if row is None else row.manifest_hash
        return SkillOutcome(slug, action, want.version, want.manifest_hash, previous, found)

    def _write_on_disk(
        self,
        intent: SkillCache,
        want: Want,
        *,
        manifest: Manifest,
        files: Mapping[str, PackageFile],
        seen: Observation,
        how: swap.Plan,
    ) -> swap.Written:
        """The filesystem part of a write, in one worker thread: intent, write, result.

        From the moment the intent is durable until the result replaces it, this slug's
        disk state is our own unfinished work: a crash must not make it look like drift
        to adopt. The intent is durable before anything visible changes (`save_cache`);
        the result is not waited for (`Target.save_result` says why).
        """
        slug = intent.slug
        self.target.save_cache(intent)
        self.step("materialize.intent_saved")
        written = swap.write(
            self.target, slug, manifest=manifest, files=files, seen=seen, how=how, step=self.step
        )
        done = SkillCache(slug, want.manifest_hash, want.version, written.tree, None, written.files)
        self.target.save_result(done)
        self.step("materialize.cache_saved")
        return written

    async def _adopt(
        self,
        slug: str,
        want: Want,
        *,
        row: Applied | None,
        cache: SkillCache | None,
        seen: Observation,
        found: tuple[DriftItem, ...],
    ) -> SkillOutcome:
        """Publish the disk's package as a new version, then write it back cleanly.

        The compare-and-swap is against the version the target had applied: if the head
        moved since, the edit was made to an old package and is not forced over the new
        one (`HeadConflict`, reported; the disk is left as it is).
        """
        adopter = self.adopter
        assert adopter is not None
        base = row.version if row is not None and row.version is not None else None
        if base is None and cache is not None:
            base = cache.version
        if base is None:
            raise Inconsistency(f"{slug}: no applied version to adopt the edit against")
        limit = adopter.max_file_bytes
        try:
            raw = await self.blocking(drift.read_observed, self.target, slug, seen, limit)
        except ValueError as exc:
            raise Inconsistency(f"{slug}: {exc}") from exc
        files = {p: PackageFile(data, executable=x) for p, (data, x) in raw.items()}
        adopted = await adopter.adopt(
            slug,
            files,
            base=base,
            place=Place.of(self.target),
            actor=self.actor,
            skill_id=want.skill_id,
        )
        outcome = await self._write(
            slug, adopted, row=row, cache=cache, seen=seen, action=ADOPTED, found=found
        )
        return replace(outcome, previous_hash=None if row is None else row.manifest_hash)

    async def _remove(
        self,
        slug: str,
        row: Applied | None,
        cache: SkillCache | None,
        seen: Observation,
    ) -> SkillOutcome | None:
        recorded = row is not None and row.manifest_hash is not None
        if seen.entry == drift.ABSENT and cache is None and not recorded:
            return None
        if seen.entry != drift.ABSENT and not self._owned(cache, seen, recorded=recorded):
            return None
        await self.blocking(swap.remove, self.target, slug, self.step)
        await self.records.removed(slug)
        await self.blocking(self.target.drop_cache, slug)
        await self.hit("reconcile.skill_done")
        previous = None if row is None else row.manifest_hash
        return SkillOutcome(slug, REMOVED, previous_hash=previous)


def _describe(seen: Observation) -> str:
    if seen.entry == DIR:
        return "folder"
    return seen.detail.removeprefix("a ") or "file"


def _as_registry_error(exc: BaseException) -> RegistryError:
    if isinstance(exc, BlobStoreError):
        return blob_store_failed(exc)
    return StorageUnavailable("target filesystem", str(exc))
