"""The blob store contract, run against every backend (`[memory]`, `[local]`, `[s3]`).

A backend that passes this file is a `BlobStore`. Backend-specific behaviour (layouts,
durability steps, retries) is tested in the sibling files.
"""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta

import pytest

from blobstore import (
    BlobCorrupted,
    BlobInfo,
    BlobNotFound,
    BlobStore,
    BlobStoreUnavailable,
    DigestMismatch,
    InvalidDigest,
    compute_digest,
)


def blob(seed: int, size: int = 1000) -> tuple[str, bytes]:
    data = random.Random(seed).randbytes(size)
    return compute_digest(data), data


async def listing(store: BlobStore) -> dict[str, BlobInfo]:
    return {info.digest: info async for info in store.iter_digests()}


def objects(footprint: set[str]) -> set[str]:
    """The stored things in a footprint: files and keys, not directories."""
    return {entry for entry in footprint if not entry.endswith("/")}


async def test_store_satisfies_the_protocol(store):
    assert isinstance(store, BlobStore)
    assert store.url.split("://")[0] in {"memory", "file", "s3"}


async def test_round_trip(store):
    digest, data = blob(1)
    assert await store.put(digest, data) is True
    assert await store.get(digest) == data
    assert await store.exists(digest)


async def test_empty_blob_round_trip(store):
    digest = compute_digest(b"")
    assert await store.put(digest, b"") is True
    assert await store.get(digest) == b""
    info = await store.stat(digest)
    assert info is not None
    assert info.size == 0


async def test_put_is_idempotent(store):
    digest, data = blob(2)
    assert await store.put(digest, data) is True
    assert await store.put(digest, data) is False
    assert await store.get(digest) == data
    assert set(await listing(store)) == {digest}


async def test_put_many_stores_every_blob_and_reports_the_new_ones(store):
    old_digest, old = blob(20)
    await store.put(old_digest, old)
    batch = dict(blob(seed) for seed in range(21, 31))
    batch[old_digest] = old
    new = await store.put_many(batch, concurrency=3)
    assert new == set(batch) - {old_digest}
    for digest, data in batch.items():
        assert await store.get(digest) == data
    assert set(await listing(store)) == set(batch)
    assert await store.put_many(batch) == frozenset()
    assert await store.put_many({}) == frozenset()


async def test_put_many_refuses_a_blob_that_does_not_match_its_digest(store):
    good_digest, good = blob(40)
    digest, _ = blob(41)
    _, other = blob(42)
    with pytest.raises(DigestMismatch):
        await store.put_many({good_digest: good, digest: other})
    assert not await store.exists(digest)


async def test_put_refuses_bytes_that_do_not_match_the_digest(backend, store):
    digest, _ = blob(3)
    other_digest, other = blob(4)
    before = backend.footprint()

    with pytest.raises(DigestMismatch) as refused:
        await store.put(digest, other)

    assert refused.value.expected == digest
    assert refused.value.actual == other_digest
    assert not await store.exists(digest)
    assert not await store.exists(other_digest)
    assert await listing(store) == {}
    assert backend.footprint() == before


async def test_corrupted_object_is_detected_on_read(backend, store):
    digest, data = blob(5)
    await store.put(digest, data)

    backend.corrupt(digest)

    with pytest.raises(BlobCorrupted) as corrupted:
        await store.get(digest)
    assert corrupted.value.digest == digest
    assert corrupted.value.actual != digest
    # Presence and listing do not read the bytes: fsck finds corruption by reading.
    assert await store.exists(digest)
    assert digest in await listing(store)


async def test_corrupted_object_is_repaired_by_delete_then_put(backend, store):
    digest, data = blob(6)
    await store.put(digest, data)
    backend.corrupt(digest)

    # Same size, so put cannot tell without reading: it reports the object as present.
    assert await store.put(digest, data) is False
    await store.delete(digest)
    assert await store.put(digest, data) is True
    assert await store.get(digest) == data


async def test_missing_blob(store):
    digest, _ = blob(7)
    with pytest.raises(BlobNotFound) as missing:
        await store.get(digest)
    assert missing.value.digest == digest
    assert isinstance(missing.value, KeyError)
    assert not await store.exists(digest)
    assert await store.stat(digest) is None


async def test_stat_reports_size_and_utc_stored_time(store):
    digest, data = blob(8, size=4321)
    # Some backends keep whole seconds only (S3's Last-Modified).
    before = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
    await store.put(digest, data)
    after = datetime.now(UTC) + timedelta(seconds=1)

    info = await store.stat(digest)

    assert info is not None
    assert info.digest == digest
    assert info.size == len(data)
    assert info.stored_at.utcoffset() == timedelta(0)
    assert before <= info.stored_at <= after


async def test_delete_is_idempotent(store):
    digest, data = blob(9)
    kept_digest, kept = blob(10)
    await store.put(digest, data)
    await store.put(kept_digest, kept)

    await store.delete(digest)
    await store.delete(digest)
    await store.delete(blob(11)[0])

    assert not await store.exists(digest)
    with pytest.raises(BlobNotFound):
        await store.get(digest)
    assert await store.get(kept_digest) == kept
    assert set(await listing(store)) == {kept_digest}


async def test_iter_digests_of_an_empty_store(store):
    assert await listing(store) == {}


async def test_iter_digests_lists_exactly_what_is_stored(store):
    blobs = dict(blob(seed, size=seed) for seed in range(100, 250))
    await asyncio.gather(*(store.put(digest, data) for digest, data in blobs.items()))

    listed = await listing(store)

    assert set(listed) == set(blobs)
    assert {digest: info.size for digest, info in listed.items()} == {
        digest: len(data) for digest, data in blobs.items()
    }

    deleted = sorted(blobs)[:50]
    await asyncio.gather(*(store.delete(digest) for digest in deleted))
    assert set(await listing(store)) == set(blobs) - set(deleted)


async def test_concurrent_puts_of_one_digest(backend, store):
    digest, data = blob(12, size=256 * 1024)

    results = await asyncio.gather(*(store.put(digest, data) for _ in range(32)))

    # Every writer succeeds; at least one reports storing it. More than one may, where
    # writers race past the existence check (the bytes are identical, so that is harmless).
    assert True in results
    assert await store.get(digest) == data
    stored = objects(backend.footprint())
    assert len(stored) == 1, stored
    assert stored.pop().endswith(digest)


async def test_concurrent_puts_of_distinct_digests(store):
    blobs = dict(blob(seed) for seed in range(300, 332))

    results = await asyncio.gather(*(store.put(digest, data) for digest, data in blobs.items()))

    assert results == [True] * 32
    fetched = await asyncio.gather(*(store.get(digest) for digest in blobs))
    assert fetched == list(blobs.values())


async def test_large_blob_round_trip(store):
    digest, data = blob(13, size=32 * 1024 * 1024)
    assert await store.put(digest, data) is True
    assert await store.get(digest) == data
    info = await store.stat(digest)
    assert info is not None
    assert info.size == len(data)


VALID = compute_digest(b"valid")
ESCAPES = {
    "dotdot": "../../../../etc/passwd",
    "dotdot-64": ("../" * 22)[:63] + "a",
    "absolute": "/etc/passwd",
    "short": VALID[:62],
    "long": VALID + "00",
    "upper": VALID.upper(),
    "non-hex": "g" * 64,
    "empty": "",
    "newline": VALID + "\n",
    "slash-64": VALID[:30] + "/" + VALID[31:],
    "backslash-64": VALID[:30] + "\\" + VALID[31:],
    "nul-64": VALID[:30] + "\x00" + VALID[31:],
    "bytes": VALID.encode(),
    "none": None,
}


@pytest.mark.parametrize("bad", ESCAPES.values(), ids=ESCAPES.keys())
async def test_malformed_digest_is_refused_by_every_method(backend, store, bad):
    before = backend.footprint()
    calls = {
        "put": lambda: store.put(bad, b"x"),
        "put_many": lambda: store.put_many({bad: b"x"}),
        "get": lambda: store.get(bad),
        "exists": lambda: store.exists(bad),
        "stat": lambda: store.stat(bad),
        "delete": lambda: store.delete(bad),
    }
    for name, call in calls.items():
        with pytest.raises(InvalidDigest):
            await call()
        assert backend.footprint() == before, name
    assert await listing(store) == {}


async def test_closed_store_refuses_every_call(store):
    digest, data = blob(14)
    await store.put(digest, data)
    await store.close()
    await store.close()

    for call in (
        lambda: store.put(digest, data),
        lambda: store.get(digest),
        lambda: store.exists(digest),
        lambda: store.stat(digest),
        lambda: store.delete(digest),
        lambda: listing(store),
        store.ensure,
        store.check,
    ):
        with pytest.raises(BlobStoreUnavailable, match="closed"):
            await call()


async def test_ensure_is_idempotent_and_check_passes(store):
    await store.ensure()
    await store.ensure()
    await store.check()
