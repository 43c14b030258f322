"""The remote source: desired state, blobs and records over the registry's HTTP API.

What `skillreg sync` materialises from, with nothing but a URL and a token:

    begin    GET .../desired?agent=&target=&signed=true, with If-None-Match: the tag of
             the state saved last time (`.skillreg/remote.json`). 304: that state again;
             200: the new one. Either way its signed state is checked against the keys
             the target pinned (`trust.py`: signature, rollback, expiry, mix-and-match)
             before it is saved or used, and each wanted package against its signed
             digest and attestation. If the registration is not where the target is:
             PUT .../targets/{id}. With a lock file, each pin's version (conditional too).
    files    from the local cache (`.skillreg/blobs/`, content-addressed, every read
             verified); what it lacks: GET .../blobs/{digest}, refused unless it has the
             manifest's size and hashes to the digest, and cached before it is used
    record   PUT .../targets/{id}/skills/{slug}; the first record of a run also carries
             the host's trust report when it changed (a registry that says
             `Skillreg-Features: record-trust`), else PUT .../targets/{id}/trust tells it
             at the end of the run (at once for a state refused). Each record carries the
             saved state's tag (`record-tag`); the registry answers the tag of that state
             with the record, kept with it, so the next poll is a 304, not the whole state
             again for the host's own record
    finish   the cache keeps the blobs of the desired state and, for each of its skills,
             those of the version the state before wanted (`remote.json`: `previous`),
             nothing else

So a registry that has not changed costs one request and no blob, a new version costs
the blobs that changed, and a move back to the version held before (a revocation, a
restore) costs none. Every failure is a `RegistryError` the reconciler reports for the
skill it was working on, leaving the skill's previous package in place: the server away
or answering 5xx (`storage_unavailable`), a blob that is truncated or does not hash to its
digest (`integrity_error`), a token refused (`unauthenticated`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import Any, Final, TypeVar

from blake3 import blake3
from pydantic import BaseModel, ConfigDict, ValidationError

from blobstore import BlobCorrupted, BlobNotFound
from blobstore.local import LocalBlobStore
from registry.client.admission import RULE_WRONG_SCOPE, Admitted, admit, received_manifest
from registry.client.http import RULE_MALFORMED, RegistryClient
from registry.client.trust import HostTrust
from registry.domain.display import visible
from registry.domain.limits import Limits
from registry.domain.manifest import Manifest
from registry.domain.model import PackageFile, Scope
from registry.domain.signed_state import StateEntry
from registry.errors import Inconsistency, RegistryError, RemoteRefused
from registry.failpoints import NO_FAILPOINTS, Failpoints
from registry.services.materialize.exchange import applied_record, place_of, record_request
from registry.services.materialize.lockfile import LockFile
from registry.services.materialize.source import (
    Applied,
    Change,
    Desired,
    Place,
    Snapshot,
    Want,
    resolve,
)
from registry.services.materialize.target import Target
from registry.wire import (
    FEATURES,
    RECORD_TAG,
    RECORD_TRUST,
    DesiredFile,
    DesiredState,
    RecordResult,
    TargetRegistration,
    TrustReport,
)

T = TypeVar("T")

_FETCH_CONCURRENCY: Final = 8
_STATE_FORMAT: Final = 1


class _Pinned(BaseModel):
    """The part of `GET .../skills/{slug}/versions/{n}` a pin needs."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    version: int
    manifest_hash: str
    files: list[DesiredFile]


@dataclass
class _Saved:
    """What `remote.json` holds: the desired state as last fetched, and pinned versions.

    `previous`: for each skill, the blob digests of the package an earlier state wanted
    before the one it wants now, kept in the cache for a move back.
    """

    etag: str | None = None
    state: DesiredState | None = None
    pins: dict[str, tuple[str, _Pinned]] | None = None
    previous: dict[str, list[str]] | None = None


class RemoteSource:
    """A `Source` over the registry's HTTP API, with a local blob cache in the target."""

    records_prove_ownership = False  # the server's word; only the target's own cache counts

    def __init__(
        self,
        client: RegistryClient,
        scope: Scope,
        *,
        trust: HostTrust,
        limits: Limits | None = None,
        failpoints: Failpoints = NO_FAILPOINTS,
    ) -> None:
        self.client = client
        self.scope = scope
        self.trust = trust
        self.limits = limits or Limits()
        self.failpoints = failpoints
        self._target: Target | None = None
        self._cache: LocalBlobStore | None = None
        self._saved = _Saved()
        self._pins: dict[str, tuple[str, _Pinned]] = {}
        self._fetched = 0
        self._features: set[str] = set()  # what the registry takes (`Skillreg-Features`)
        self._retagged = False  # the saved state's tag moved with a record: save it
        self._untold: TrustReport | None = None  # to go with this run's first record

    @property
    def fetched(self) -> int:
        return self._fetched

    @property
    def _base(self) -> str:
        return f"/v1/workspaces/{self.scope.workspace}"

    @property
    def cache(self) -> LocalBlobStore:
        assert self._cache is not None, "begin() first"
        return self._cache

    # ------------------------------------------------------------ begin

    async def begin(self, target: Target, lock: LockFile | None) -> Snapshot:
        self._target = target
        self._cache = LocalBlobStore(target.blob_cache)
        await self._cache.ensure()
        # This process holds the target's lock, so a temp file in the cache is a killed
        # run's; one still being written would be locked by its writer and kept anyway.
        await self._cache.sweep_temp(datetime.now(UTC) + timedelta(days=1))
        self._saved = await _settled(self._load, target)
        await self.trust.pin(await _settled(target.load_trust), str(target.path))
        try:
            snapshot = await self._checked(target, lock)
        except RemoteRefused as exc:
            self.trust.refused(exc)
            await self._conclude(target)
            raise
        await self._conclude(target)
        return snapshot

    async def _checked(self, target: Target, lock: LockFile | None) -> Snapshot:
        state, admitted = await self._desired(target)
        place = Place.of(target)
        if state.target is None or place_of(state.target) != place:
            await self._register(place)
        self._pins = {}
        wanted = await resolve(admitted.heads, lock, self._pinned)
        if lock is not None:
            self._saved.pins = self._pins  # this lock's pins; those of an earlier lock go
            await self._save(target)
        blocked = {**wanted.blocked, **admitted.blocked}
        # A revoked version is never applied: not wanted, so the engine removes it.
        revoked = {s for s, w in wanted.wants.items() if self.trust.revoked(s, w.version)}
        wants = {s: w for s, w in wanted.wants.items() if s not in blocked and s not in revoked}
        blocked |= await self._check_packages(wants)
        wants = {s: w for s, w in wants.items() if s not in blocked}
        signed = self.trust.state
        assert signed is not None, "checked by _desired"
        self.trust.applied(signed)
        return Snapshot(Desired(wants, blocked), admitted.applied, admitted.refused)

    async def _check_packages(self, wants: dict[str, Want]) -> dict[str, RegistryError]:
        """Each package taken from the listing against its version's attestation.

        The files are bound already: they hash to the manifest hash the signed state
        names. An attestation verified for them before is known; the others are fetched
        (a few at a time) and checked. A version published before versions were signed
        has none, and the signed state says so.
        """
        fresh: list[tuple[str, Want, StateEntry]] = []
        for slug, want in sorted(wants.items()):
            entry = self.trust.entry(slug)
            if entry is None or entry.version != want.version or want.manifest is None:
                continue  # a pin: checked when it was fetched (`_pinned`)
            if entry.attestation is None or self.trust.known(entry, want.manifest):
                continue
            fresh.append((slug, want, entry))
        gate = asyncio.Semaphore(_FETCH_CONCURRENCY)

        async def one(slug: str, want: Want, entry: StateEntry) -> tuple[str, RegistryError | None]:
            assert want.manifest is not None
            try:
                async with gate:
                    await self.trust.check_package(
                        slug, want.version, want.manifest, self._base, signed=entry
                    )
            except RemoteRefused as exc:
                return slug, exc
            return slug, None

        found = await _all([one(*item) for item in fresh])
        return {slug: error for slug, error in found if error is not None}

    async def _conclude(self, target: Target) -> None:
        """Keep what the checks concluded (`trust.json`); tell the registry if it changed.

        A verified state is told with the run's first record, if the registry takes it
        there (`record-trust`) and the run records anything; else at the end of the run
        (`finish`). A state refused or stale is told at once: the run records nothing.
        """
        pins = self.trust.pinned
        self._untold = None
        if pins is None:
            return
        await self._save_trust(target)
        report = self.trust.report()
        if report is None:
            return
        if report.state == "verified":
            self._untold = report
            return
        await self._tell(target, report)

    async def _tell(self, target: Target, report: TrustReport) -> None:
        """`PUT .../targets/{id}/trust`, best effort."""
        try:
            await self.client.request(
                "PUT",
                f"{self._base}/targets/{target.target_id}/trust",
                json=report.model_dump(mode="json"),
            )
        except RegistryError:
            return  # told next time: the host's own file is what counts
        await self._told(target)

    async def _told(self, target: Target) -> None:
        self._untold = None
        self.trust.told()
        await self._save_trust(target)

    async def _save_trust(self, target: Target) -> None:
        """Write `trust.json` if it changed (an unchanged run writes nothing)."""
        assert self.trust.pinned is not None
        data = self.trust.pinned.dumps()
        if data != self.trust.saved:
            await _settled(target.save_trust, data)
            self.trust.saved = data

    async def _desired(self, target: Target) -> tuple[DesiredState, Admitted]:
        """The desired state (saved, when it is new, only once it checked out), admitted."""
        params = {"agent": self.scope.agent, "target": target.target_id, "signed": "true"}
        saved = self._saved
        headers = {}
        if saved.etag is not None and saved.state is not None:
            headers["If-None-Match"] = saved.etag
        response = await self.client.request(
            "GET", f"{self._base}/desired", ok=(200, 304), params=params, headers=headers
        )
        self._features = {f.strip() for f in response.headers.get(FEATURES, "").split(",")}
        if response.status == HTTPStatus.NOT_MODIFIED and saved.state is not None:
            await self.trust.check_state(saved.state)  # a 304 for ever must not freeze it
            return saved.state, admit(saved.state, self.limits)
        what = f"GET {self._base}/desired"
        try:
            state = DesiredState.model_validate_json(response.content)
        except ValidationError as exc:
            raise RemoteRefused(what, RULE_MALFORMED, visible(str(exc))) from None
        if (state.workspace, state.agent) != (self.scope.workspace, self.scope.agent):
            shown = visible(f"{state.workspace}/{state.agent}", 300)
            raise RemoteRefused(what, RULE_WRONG_SCOPE, f"the desired state of {shown}")
        await self.trust.check_state(state)
        admitted = admit(state, self.limits)
        self._saved.previous = _previous(saved.state, state, saved.previous or {})
        self._saved.etag = response.headers.get("etag")
        self._saved.state = state
        await self._save(target)
        return state, admitted

    async def _register(self, place: Place) -> None:
        body = TargetRegistration.model_validate(
            {"agent": self.scope.agent, "path": place.path, "host": place.host, "mode": place.mode}
        )
        await self.client.request(
            "PUT", f"{self._base}/targets/{place.target_id}", json=body.model_dump(mode="json")
        )

    async def _pinned(self, slug: str, version: int, skill_id: int | None) -> Want:
        del skill_id  # the registry's row ids stay on the server
        key = f"{slug}@{version}"
        known = (self._saved.pins or {}).get(key)
        response = await self.client.request(
            "GET",
            f"{self._base}/skills/{slug}/versions/{version}",
            ok=(200, 304),
            params={"agent": self.scope.agent},
            headers={} if known is None else {"If-None-Match": known[0]},
        )
        if response.status == HTTPStatus.NOT_MODIFIED and known is not None:
            tag, pinned = known
        else:
            what = f"GET {self._base}/skills/{slug}/versions/{version}"
            try:
                pinned = _Pinned.model_validate_json(response.content)
            except ValidationError as exc:
                raise RemoteRefused(what, RULE_MALFORMED, visible(str(exc))) from None
            tag = response.headers.get("etag", "")
        manifest = received_manifest(slug, pinned.files, self.limits)
        if manifest.hash != pinned.manifest_hash or pinned.version != version:
            raise Inconsistency(f"{slug} version {version}: the files do not match its hash")
        # The lock's manifest hash binds the files already; the attestation says who wrote
        # them, and a forged one is refused (one the registry does not have is not needed).
        await self.trust.check_package(slug, version, manifest, self._base)
        self._pins[key] = (tag, pinned)  # kept once checked, for the next run's If-None-Match
        return Want(None, version, manifest.hash, manifest=manifest)

    # ------------------------------------------------------------ what the engine asks

    async def manifest(self, want: Want) -> Manifest:
        assert want.manifest is not None, "a remote want carries its manifest"
        return want.manifest

    async def files(self, manifest: Manifest) -> dict[str, PackageFile]:
        sizes = {e.digest: e.size for e in manifest.entries}
        gate = asyncio.Semaphore(_FETCH_CONCURRENCY)

        async def one(digest: str) -> tuple[str, bytes]:
            async with gate:
                return digest, await self._blob(digest, sizes[digest])

        fetched = dict(await _all([one(d) for d in sorted(sizes)]))
        return {e.path: PackageFile(fetched[e.digest], e.executable) for e in manifest.entries}

    async def _blob(self, digest: str, size: int) -> bytes:
        try:
            return await self.cache.get(digest)
        except BlobNotFound:
            pass
        except BlobCorrupted:
            await self.cache.delete(digest)  # fetched again below
        data = await self.client.download(f"{self._base}/blobs/{digest}", size)
        if len(data) != size or blake3(data).hexdigest() != digest:
            msg = f"blob {digest[:16]}: {len(data)} bytes that do not hash to it ({size} expected)"
            raise Inconsistency(msg)
        await self.failpoints.hit("sync.blob_fetched")
        await self.cache.put(digest, data)
        self._fetched += 1
        await self.failpoints.hit("sync.blob_cached")
        return data

    async def record(self, *, expected: Applied | None, new: Applied, change: Change) -> None:
        target = self._target
        assert target is not None, "begin() first"
        body = record_request(expected=expected, new=new, change=change)
        told = self._untold if RECORD_TRUST in self._features else None
        held = self._saved.etag if RECORD_TAG in self._features else None
        body = body.model_copy(update={"trust": told, "state_tag": held})
        # An older registry takes neither field at all, not even null.
        unasked = {k for k, v in (("trust", told), ("state_tag", held)) if v is None}
        answer = await self.client.request(
            "PUT",
            f"{self._base}/targets/{target.target_id}/skills/{new.slug}",
            json=body.model_dump(mode="json", exclude=unasked),
        )
        if told is not None:
            await self._told(target)
        if held is not None:
            self._retag(held, new, answer.content)

    def _retag(self, held: str, new: Applied, content: bytes) -> None:
        """Hold the state with this record under the tag the registry gave (if it did).

        The registry gives one only if the state the host holds is its state now but for
        this record; a tag it should not have given costs nothing but a state fetched
        later than it should be: a 304 brings back the saved state, checked again.
        """
        try:
            tag = RecordResult.model_validate_json(content).state_tag
        except ValidationError:
            return
        state = self._saved.state
        if tag is None or state is None or self._saved.etag != held:
            return
        records = [*(a for a in state.applied if a.slug != new.slug), applied_record(new)]
        self._saved.state = state.model_copy(update={"applied": records, "etag": tag})
        self._saved.etag = tag
        self._retagged = True

    async def finish(self, desired: Desired) -> None:
        """Tell a verified state no record told; trim the cache (see the module docstring)."""
        if self._untold is not None and self._target is not None:
            await self._tell(self._target, self._untold)
        if self._retagged and self._target is not None:
            await self._save(self._target)
            self._retagged = False
        keep = {
            e.digest
            for want in desired.wants.values()
            if want.manifest is not None
            for e in want.manifest.entries
        }
        keep.update(d for digests in (self._saved.previous or {}).values() for d in digests)
        stale = [info.digest async for info in self.cache.iter_digests() if info.digest not in keep]
        for digest in stale:
            await self.cache.delete(digest)

    # ------------------------------------------------------------ remote.json

    def _load(self, target: Target) -> _Saved:
        data = target.load_source_state()
        if data is None:
            return _Saved()
        try:
            body = json.loads(data)
            if (body["format"], body["url"], body["workspace"], body["agent"]) != (
                _STATE_FORMAT,
                self.client.url,
                self.scope.workspace,
                self.scope.agent,
            ):
                return _Saved()
            state = DesiredState.model_validate(body["state"])
            pins = {
                key: (str(tag), _Pinned.model_validate(pinned))
                for key, (tag, pinned) in body.get("pins", {}).items()
            }
            previous = {
                str(slug): [str(d) for d in digests]
                for slug, digests in body.get("previous", {}).items()
            }
        except (ValueError, KeyError, TypeError, AttributeError):
            return _Saved()  # only a cache: a full fetch recovers
        return _Saved(str(body["etag"]), state, pins, previous)

    async def _save(self, target: Target) -> None:
        saved = self._saved
        if saved.state is None or saved.etag is None:
            return
        body = {
            "format": _STATE_FORMAT,
            "url": self.client.url,
            "workspace": self.scope.workspace,
            "agent": self.scope.agent,
            "etag": saved.etag,
            "state": saved.state.model_dump(mode="json"),
            "pins": {
                key: [tag, pinned.model_dump(mode="json")]
                for key, (tag, pinned) in (saved.pins or {}).items()
            },
            "previous": saved.previous or {},
        }
        data = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        await _settled(target.save_source_state, data)
        await self.failpoints.hit("sync.state_saved")


def _previous(
    before: DesiredState | None, now: DesiredState, kept: dict[str, list[str]]
) -> dict[str, list[str]]:
    """Each skill of `now`'s blobs of the package wanted before it (see `_Saved`).

    A skill whose files changed from `before` to `now` keeps those of `before`; one
    unchanged keeps what it kept; a skill no longer listed keeps nothing.
    """
    old = {s.slug: s.files for s in before.skills} if before is not None else {}
    previous: dict[str, list[str]] = {}
    for skill in now.skills:
        files = old.get(skill.slug)
        digests = sorted({f.digest for f in files or ()})
        if digests and digests != sorted({f.digest for f in skill.files or ()}):
            previous[skill.slug] = digests
        elif skill.slug in kept:
            previous[skill.slug] = kept[skill.slug]
    return previous


async def _settled(fn: Callable[..., T], /, *args: Any) -> T:
    """Run file work on the target in a worker thread that is always waited for.

    A cancelled caller still waits for the thread before the cancellation goes on: the
    reconciler closes the target's descriptors as the cancellation unwinds, and must not
    close them under a thread that is using them.
    """
    future = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait([future])
        raise


async def _all(coros: list[Coroutine[Any, Any, T]]) -> list[T]:
    """Run `coros` together; their results, or the first error once every one has ended.

    Not a `TaskGroup`: on Python 3.11 a task group whose child fails while the parent
    waits in its exit cancels the parent without taking that cancellation back, so a
    deadline around the run (`asyncio.timeout`) would no longer be told apart from a
    cancellation.
    """
    tasks = [asyncio.ensure_future(c) for c in coros]
    if not tasks:
        return []
    try:
        return await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        for task in tasks:
            if not task.cancelled():
                task.exception()  # retrieved: the first one is what gather raised
