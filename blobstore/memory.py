"""An in-memory blob store: the fake for unit tests, held to the same contract as the others.

It passes the same conformance suite (tests/blobstore/) as the local and S3 stores, so a
test written against it holds for them: it verifies digests on `put` and on `get`, refuses
malformed digests, and refuses every call once closed.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from blobstore.base import BlobInfo
from blobstore.digest import check_digest, compute_digest
from blobstore.errors import BlobCorrupted, BlobNotFound, BlobStoreUnavailable, DigestMismatch

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping


@dataclass(frozen=True, slots=True)
class _Stored:
    data: bytes
    stored_at: datetime


class MemoryBlobStore:
    """A `BlobStore` held in a dict; every instance is separate and starts empty.

    `memory://name` names the store in its URL only: opening the same URL twice gives two
    independent stores, because sharing would need process-global state.
    """

    def __init__(self, name: str = "") -> None:
        """Create an empty store; `name` appears in `url` and nowhere else."""
        self._name = name
        self._objects: dict[str, _Stored] = {}
        self._closed = False

    @property
    def url(self) -> str:
        """`memory://` followed by the store's name."""
        return f"memory://{self._name}"

    async def put(self, digest: str, data: bytes) -> bool:
        """Store `data` under `digest` after checking that it hashes to it."""
        digest = await self._enter(digest)
        actual = compute_digest(data)
        if actual != digest:
            raise DigestMismatch(digest, actual)
        if digest in self._objects:
            return False
        # A copy, so that a caller mutating its buffer later cannot change a stored blob.
        self._objects[digest] = _Stored(bytes(data), datetime.now(UTC))
        return True

    async def put_many(
        self,
        blobs: Mapping[str, bytes],
        *,
        concurrency: int = 8,  # noqa: ARG002 - nothing to bound in memory
    ) -> frozenset[str]:
        """Store every blob; return those that were newly stored."""
        return frozenset([digest for digest, data in blobs.items() if await self.put(digest, data)])

    async def get(self, digest: str) -> bytes:
        """Return the verified bytes stored under `digest`."""
        digest = await self._enter(digest)
        stored = self._objects.get(digest)
        if stored is None:
            raise BlobNotFound(digest)
        actual = compute_digest(stored.data)
        if actual != digest:
            raise BlobCorrupted(digest, actual)
        return stored.data

    async def exists(self, digest: str) -> bool:
        """Return True if an object is stored under `digest` (not verified)."""
        digest = await self._enter(digest)
        return digest in self._objects

    async def stat(self, digest: str) -> BlobInfo | None:
        """Size and stored time of the object, or None."""
        digest = await self._enter(digest)
        stored = self._objects.get(digest)
        if stored is None:
            return None
        return BlobInfo(digest, len(stored.data), stored.stored_at)

    async def delete(self, digest: str) -> None:
        """Remove the object if there is one."""
        digest = await self._enter(digest)
        self._objects.pop(digest, None)

    async def iter_digests(self) -> AsyncIterator[BlobInfo]:
        """Every stored object, from a snapshot taken when iteration starts."""
        self._check_open()
        # A snapshot, because callers (GC) delete while they iterate.
        snapshot = list(self._objects.items())
        for digest, stored in snapshot:
            await asyncio.sleep(0)
            yield BlobInfo(digest, len(stored.data), stored.stored_at)

    async def ensure(self) -> None:
        """Nothing to create; refuses only when closed."""
        self._check_open()

    async def check(self) -> None:
        """Usable until closed."""
        self._check_open()

    async def close(self) -> None:
        """Refuse every later call; the stored objects are dropped."""
        self._closed = True
        self._objects.clear()

    def tamper(self, digest: str, data: bytes) -> None:
        """Replace the stored bytes of `digest` without verification (tests of `BlobCorrupted`)."""
        digest = check_digest(digest)
        stored = self._objects.get(digest)
        if stored is None:
            raise BlobNotFound(digest)
        self._objects[digest] = _Stored(bytes(data), stored.stored_at)

    async def _enter(self, digest: str) -> str:
        digest = check_digest(digest)
        # The real stores suspend at every call; so does this one, so that a test using it
        # can cancel a write inside blob I/O and see other tasks interleave there.
        await asyncio.sleep(0)
        self._check_open()
        return digest

    def _check_open(self) -> None:
        if self._closed:
            raise BlobStoreUnavailable(f"{self.url} is closed")
