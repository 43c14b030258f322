"""The `BlobStore` protocol: the contract every backend passes (tests/blobstore/)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping
    from datetime import datetime


@dataclass(frozen=True, slots=True)
class BlobInfo:
    """What a store knows about one stored object without reading it."""

    digest: str
    size: int
    stored_at: datetime


@runtime_checkable
class BlobStore(Protocol):
    """Content-addressed blob storage keyed by BLAKE3 hex digest.

    Every method validates the digest before it builds a path or key from it
    (`InvalidDigest`). Implementations are safe to call concurrently from one event loop.
    """

    @property
    def url(self) -> str:
        """The store's location, without credentials."""
        ...

    async def put(self, digest: str, data: bytes) -> bool:
        """Store `data` under `digest`; True if newly stored, False if it was already there.

        Raises `DigestMismatch` (storing nothing) if `data` does not hash to `digest`.
        Idempotent and safe under concurrent puts of the same digest.
        """
        ...

    async def put_many(self, blobs: Mapping[str, bytes], *, concurrency: int = 8) -> frozenset[str]:
        """Store every blob as `put` would; return the digests that were newly stored.

        Returns only when every blob is stored; on the first failure it raises (some blobs
        may be stored then, which is harmless: they are content-addressed and idempotent).
        `concurrency` bounds the requests in flight for network stores; a local store may
        store them all in one worker-thread hop.
        """
        ...

    async def get(self, digest: str) -> bytes:
        """Return the bytes stored under `digest`, verified (`BlobNotFound`, `BlobCorrupted`)."""
        ...

    async def exists(self, digest: str) -> bool:
        """Return True if an object is stored under `digest` (not verified)."""
        ...

    async def stat(self, digest: str) -> BlobInfo | None:
        """Size and stored time of the object, or None if there is none (not verified)."""
        ...

    async def delete(self, digest: str) -> None:
        """Remove the object; deleting a missing object is not an error."""
        ...

    def iter_digests(self) -> AsyncIterator[BlobInfo]:
        """Every stored object, streamed (memory does not grow with the store)."""
        ...

    async def ensure(self) -> None:
        """Create what the store needs (directory, bucket) if it does not exist yet."""
        ...

    async def check(self) -> None:
        """Raise `BlobStoreUnavailable` unless the store is reachable and usable."""
        ...

    async def close(self) -> None:
        """Release connections and worker threads."""
        ...
