"""The remote source: desired state, blobs and records over the registry's HTTP API.

What `skillreg sync` materialises from, with nothing but a URL and a token:

    begin    GET .../desired?agent=&target=, with If-None-Match: the tag of the state
             saved last time (`.skillreg/remote.json`). 304: that state again; 200: the
             new one, saved. If the registration is not where the target is:
             PUT .../targets/{id}. With a lock file, each pin's version (conditional too).
    files    from the local cache (`.skillreg/blobs/`, content-addressed, every read
             verified); what it lacks: GET .../blobs/{digest}, refused unless it has the
             manifest's size and hashes to the digest, and cached before it is used
    record   PUT .../targets/{id}/skills/{slug}
    finish   the cache keeps the blobs of the desired state and nothing else

So a registry that has not changed costs one request and no blob, and a new version costs
the blobs that changed. Every failure is a `RegistryError` the reconciler reports for the
skill it was working on, leaving the skill's previous package in place: the server away
or answering 5xx (`storage_unavailable`), a blob that is truncated or does not hash to its
digest (`integrity_error`), a token refused (`unauthenticated`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, is_dataclass
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import Any, Final, TypeVar

import httpx
from blake3 import blake3
from pydantic import BaseModel, ConfigDict, ValidationError

from blobstore import BlobCorrupted, BlobNotFound
from blobstore.local import LocalBlobStore
from registry.domain.manifest import Manifest, ManifestEntry
from registry.domain.model import PackageFile, Scope
from registry.errors import Inconsistency, RegistryError, StorageUnavailable, Unauthenticated
from registry.failpoints import NO_FAILPOINTS, Failpoints
from registry.services.materialize.lockfile import LockFile
from registry.services.materialize.source import (
    Applied,
    Change,
    Desired,
    Head,
    Place,
    Snapshot,
    Want,
    resolve,
)
from registry.services.materialize.target import Target
from registry.services.materialize.wire import (
    DesiredFile,
    DesiredState,
    RecordRequest,
    TargetRegistration,
)

T = TypeVar("T")

_FETCH_CONCURRENCY: Final = 8
_STATE_FORMAT: Final = 1
PROBLEM_JSON: Final = "application/problem+json"


class RegistryClient:
    """The registry's HTTP API as the remote source uses it: one base URL, one token.

    Translates every failure into the registry's own errors: no answer or a 5xx is
    `StorageUnavailable("registry", ...)`, a problem document becomes the error its `code`
    names (with its details), anything else a `RegistryError` saying what came back.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        user_agent: str = "skillreg-sync",
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": user_agent},
            timeout=timeout,
            transport=transport,
        )

    async def close(self) -> None:
        await self._http.aclose()

    async def request(
        self, method: str, path: str, *, ok: tuple[int, ...] = (200,), **kwargs: Any
    ) -> httpx.Response:
        """Send one request; the response if its status is in `ok`, else the error it means."""
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from exc
        if response.status_code not in ok:
            raise failure(method, path, response)
        return response

    async def download(self, path: str, limit: int) -> bytes:
        """The body of `GET path`, refused (`Inconsistency`) as soon as it passes `limit`."""
        data = bytearray()
        try:
            async with self._http.stream("GET", path) as response:
                if response.status_code != HTTPStatus.OK:
                    await response.aread()
                    raise failure("GET", path, response)
                async for chunk in response.aiter_bytes():
                    data += chunk
                    if len(data) > limit:
                        msg = f"GET {path}: more than the {limit} bytes the manifest names"
                        raise Inconsistency(msg)
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from exc
        return bytes(data)

    def _unreachable(self, exc: httpx.TransportError) -> StorageUnavailable:
        return StorageUnavailable("registry", f"{self.url}: {type(exc).__name__}: {exc}")


def failure(method: str, path: str, response: httpx.Response) -> RegistryError:
    """The registry error an unexpected answer stands for."""
    status = response.status_code
    body: dict[str, Any] = {}
    if response.headers.get("content-type", "").startswith(PROBLEM_JSON):
        try:
            parsed = response.json()
        except ValueError:
            parsed = None
        body = parsed if isinstance(parsed, dict) else {}
    code, detail = str(body.get("code", "")), str(body.get("detail", ""))
    if status == HTTPStatus.UNAUTHORIZED:
        return Unauthenticated()
    details = body.get("details")
    rebuilt = _rebuild(code, details if isinstance(details, dict) else {}, detail)
    if rebuilt is not None and status < HTTPStatus.INTERNAL_SERVER_ERROR:
        return rebuilt
    said = f"{status} {code or response.reason_phrase}{': ' + detail if detail else ''}"
    if status == HTTPStatus.TOO_MANY_REQUESTS or status >= HTTPStatus.INTERNAL_SERVER_ERROR:
        return StorageUnavailable("registry", f"{method} {path}: {said}")
    return RegistryError(f"{method} {path}: the registry answered {said}")


def _error_classes(cls: type[RegistryError]) -> dict[str, type[RegistryError]]:
    found = {cls.code: cls}
    for sub in cls.__subclasses__():
        found |= _error_classes(sub)
    return found


_BY_CODE: Final = _error_classes(RegistryError)


def _rebuild(code: str, details: dict[str, Any], detail: str) -> RegistryError | None:
    """The registry error named by a problem's `code`, from its `details` if it has fields."""
    cls = _BY_CODE.get(code)
    if cls is None or cls is RegistryError:
        return None
    try:
        return cls(**details) if is_dataclass(cls) else cls(detail)
    except TypeError:
        return None


class _Pinned(BaseModel):
    """The part of `GET .../skills/{slug}/versions/{n}` a pin needs."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    version: int
    manifest_hash: str
    files: list[DesiredFile]


@dataclass
class _Saved:
    """What `remote.json` holds: the desired state as last fetched, and pinned versions."""

    etag: str | None = None
    state: DesiredState | None = None
    pins: dict[str, tuple[str, _Pinned]] | None = None


class RemoteSource:
    """A `Source` over the registry's HTTP API, with a local blob cache in the target."""

    def __init__(
        self, client: RegistryClient, scope: Scope, *, failpoints: Failpoints = NO_FAILPOINTS
    ) -> None:
        self.client = client
        self.scope = scope
        self.failpoints = failpoints
        self._target: Target | None = None
        self._cache: LocalBlobStore | None = None
        self._saved = _Saved()
        self._pins: dict[str, tuple[str, _Pinned]] = {}
        self._fetched = 0

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
        state, heads = await self._desired(target)
        place = Place.of(target)
        if state.target is None or state.target.place() != place:
            await self._register(place)
        self._pins = {}
        wanted = await resolve(heads, lock, self._pinned)
        if lock is not None:
            self._saved.pins = self._pins  # this lock's pins; those of an earlier lock go
            await self._save(target)
        applied = {a.slug: a.applied(a.slug) for a in state.applied}
        return Snapshot(wanted, applied)

    async def _desired(self, target: Target) -> tuple[DesiredState, dict[str, Head]]:
        """The desired state (saved, when it is new, only once it checked out) and its heads."""
        params = {"agent": self.scope.agent, "target": target.target_id}
        saved = self._saved
        headers = {}
        if saved.etag is not None and saved.state is not None:
            headers["If-None-Match"] = saved.etag
        response = await self.client.request(
            "GET", f"{self._base}/desired", ok=(200, 304), params=params, headers=headers
        )
        if response.status_code == HTTPStatus.NOT_MODIFIED and saved.state is not None:
            return saved.state, _heads(saved.state)
        try:
            state = DesiredState.model_validate_json(response.content)
        except ValidationError as exc:
            raise Inconsistency(f"the registry's desired state is malformed: {exc}") from exc
        if (state.workspace, state.agent) != (self.scope.workspace, self.scope.agent):
            raise Inconsistency(f"the registry answered the desired state of {state.workspace}")
        heads = _heads(state)
        self._saved.etag = response.headers.get("etag")
        self._saved.state = state
        await self._save(target)
        return state, heads

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
        if response.status_code == HTTPStatus.NOT_MODIFIED and known is not None:
            tag, pinned = known
        else:
            try:
                pinned = _Pinned.model_validate_json(response.content)
            except ValidationError as exc:
                raise Inconsistency(f"{slug} version {version}: malformed answer: {exc}") from exc
            tag = response.headers.get("etag", "")
        manifest = Manifest(
            ManifestEntry(f.path, f.digest, f.size, f.executable) for f in pinned.files
        )
        if manifest.hash != pinned.manifest_hash or pinned.version != version:
            raise Inconsistency(f"{slug} version {version}: the files do not match its hash")
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

        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(one(d)) for d in sorted(sizes)]
        except BaseExceptionGroup as failed:
            raise _first(failed) from None
        fetched = dict(t.result() for t in tasks)
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
        body = RecordRequest.of(expected=expected, new=new, change=change)
        await self.client.request(
            "PUT",
            f"{self._base}/targets/{target.target_id}/skills/{new.slug}",
            json=body.model_dump(mode="json"),
        )

    async def finish(self, desired: Desired) -> None:
        """Trim the cache to the blobs of the desired state (the disk has the rest)."""
        keep = {
            e.digest
            for want in desired.wants.values()
            if want.manifest is not None
            for e in want.manifest.entries
        }
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
        except (ValueError, KeyError, TypeError):
            return _Saved()  # only a cache: a full fetch recovers
        return _Saved(str(body["etag"]), state, pins)

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
        }
        data = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        await _settled(target.save_source_state, data)
        await self.failpoints.hit("sync.state_saved")


def _heads(state: DesiredState) -> dict[str, Head]:
    """The heads of a desired state, every manifest checked against its hash."""
    heads: dict[str, Head] = {}
    for skill in state.skills:
        try:
            heads[skill.slug] = skill.head()
        except ValueError as exc:
            raise Inconsistency(f"the registry's desired state: {exc}") from exc
    return heads


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


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first error of a task group (they fail together; one is reported)."""
    first = group.exceptions[0]
    return _first(first) if isinstance(first, BaseExceptionGroup) else first
