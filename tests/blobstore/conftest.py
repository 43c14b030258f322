"""The backends the blob store conformance suite runs against, one `backend` param each.

A `Backend` bundles the store with what a test needs to look behind its back:
`corrupt(digest)` damages a stored object the way a bad disk or a stray writer would
(same size, different bytes), and `footprint()` lists everything the backend holds in
its storage universe (local: every path under the root's parent; S3: every key in the
bucket, whatever its prefix), so a test can prove that nothing appeared anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from blobstore.local import LocalBlobStore
from blobstore.memory import MemoryBlobStore
from blobstore.s3 import S3BlobStore
from tests.harness.s3 import all_keys
from tests.plugins.s3 import S3_PREFIX

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from blobstore import BlobStore

# Small enough that the 150-blob listing test spans three S3 pages.
S3_TEST_PAGE_SIZE = 64


@dataclass(frozen=True)
class Backend:
    name: str
    store: BlobStore
    corrupt: Callable[[str], None]
    footprint: Callable[[], set[str]]


def flip_first_byte(data: bytes) -> bytes:
    assert data, "an empty blob cannot be corrupted without changing its size"
    return bytes([data[0] ^ 0xFF]) + data[1:]


def _memory_backend() -> Backend:
    store = MemoryBlobStore("conformance")

    def corrupt(digest: str) -> None:
        store.tamper(digest, flip_first_byte(store._objects[digest].data))

    return Backend("memory", store, corrupt, lambda: set(store._objects))


def _local_backend(tmp_path: Path) -> Backend:
    sandbox = tmp_path / "sandbox"
    store = LocalBlobStore(sandbox / "blobs")

    def corrupt(digest: str) -> None:
        path = store.root / digest[:2] / digest[2:4] / digest
        data = path.read_bytes()
        path.chmod(0o644)
        path.write_bytes(flip_first_byte(data))

    def footprint() -> set[str]:
        return {
            path.relative_to(sandbox).as_posix() + ("/" if path.is_dir() else "")
            for path in sandbox.rglob("*")
        }

    return Backend("local", store, corrupt, footprint)


def _s3_backend(request: pytest.FixtureRequest) -> Backend:
    endpoint_url = request.getfixturevalue("s3_server")
    bucket = request.getfixturevalue("s3_bucket")
    client = request.getfixturevalue("s3_client")
    store = S3BlobStore(
        bucket,
        S3_PREFIX,
        endpoint_url=endpoint_url,
        retry_base_delay=0,
        page_size=S3_TEST_PAGE_SIZE,
        session=request.getfixturevalue("s3_session"),
    )

    def corrupt(digest: str) -> None:
        key = store.key_for(digest)
        data = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        client.put_object(Bucket=bucket, Key=key, Body=flip_first_byte(data))

    return Backend("s3", store, corrupt, lambda: all_keys(client, bucket))


@pytest.fixture(
    params=[
        pytest.param("memory", id="memory"),
        pytest.param("local", id="local"),
        pytest.param("s3", id="s3", marks=pytest.mark.s3),
    ]
)
async def backend(request: pytest.FixtureRequest, tmp_path: Path):
    match request.param:
        case "memory":
            built = _memory_backend()
        case "local":
            built = _local_backend(tmp_path)
        case "s3":
            # Only the s3 param asks for the server, so memory and local runs never start it.
            built = _s3_backend(request)
    await built.store.ensure()
    yield built
    await built.store.close()


@pytest.fixture
def store(backend: Backend) -> BlobStore:
    return backend.store
