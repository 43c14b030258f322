"""Fixtures of the GC suite: a registry on each database and each blob store, with a clock
and failpoints the test drives.

`env` is parametrized over the blob store (local directory, S3 through moto) on top of
`database_url` (SQLite, PostgreSQL), so every test using it runs four ways.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from blobstore import BlobStore
from blobstore.local import LocalBlobStore
from blobstore.s3 import S3BlobStore
from registry import Registry
from registry.settings import Settings
from tests.blobstore.conftest import flip_first_byte
from tests.gc.helpers import ManualClock, gc_settings
from tests.plugins.s3 import S3_PREFIX
from tests.support.faults import InstrumentedStore, ScriptedFailpoints


@dataclass
class Backend:
    """A blob store and the means to damage it behind the registry's back."""

    name: str
    store: BlobStore
    corrupt: Callable[[str], None]
    remove: Callable[[str], None]


def _local(root: Path) -> Backend:
    store = LocalBlobStore(root)

    def path(digest: str) -> Path:
        return root / digest[:2] / digest[2:4] / digest

    def corrupt(digest: str) -> None:
        data = path(digest).read_bytes()
        path(digest).chmod(0o644)
        path(digest).write_bytes(flip_first_byte(data))

    return Backend("local", store, corrupt, lambda d: path(d).unlink())


def _s3(request: pytest.FixtureRequest) -> Backend:
    bucket = request.getfixturevalue("s3_bucket")
    client = request.getfixturevalue("s3_client")
    store = S3BlobStore(
        bucket,
        S3_PREFIX,
        endpoint_url=request.getfixturevalue("s3_server"),
        retry_base_delay=0,
        # Small pages, so that GC's and fsck's streamed listings span several.
        page_size=4,
        session=request.getfixturevalue("s3_session"),
    )

    def corrupt(digest: str) -> None:
        key = store.key_for(digest)
        data = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        client.put_object(Bucket=bucket, Key=key, Body=flip_first_byte(data))

    def remove(digest: str) -> None:
        client.delete_object(Bucket=bucket, Key=store.key_for(digest))

    return Backend("s3", store, corrupt, remove)


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
async def gc_backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    built = _local(tmp_path / "gc-blobs") if request.param == "local" else _s3(request)
    await built.store.ensure()
    yield built
    await built.store.close()


@dataclass
class Env:
    """One registry with everything a GC test drives."""

    registry: Registry
    backend: Backend
    store: InstrumentedStore
    clock: ManualClock
    failpoints: ScriptedFailpoints

    @property
    def raw(self) -> BlobStore:
        return self.backend.store


@pytest.fixture
async def make_env(make_registry, gc_backend: Backend) -> Callable[..., object]:
    async def make(settings: Settings | None = None) -> Env:
        clock = ManualClock()
        failpoints = ScriptedFailpoints()
        store = InstrumentedStore(gc_backend.store)
        registry = await make_registry(
            blobs=store, settings=settings or gc_settings(), clock=clock, failpoints=failpoints
        )
        return Env(registry, gc_backend, store, clock, failpoints)

    return make


@pytest.fixture
async def env(make_env) -> Env:
    return await make_env()
