"""open_blobstore: which URLs name which store, and why the others are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from blobstore import UnsupportedBlobURL, compute_digest, open_blobstore
from blobstore.local import LocalBlobStore
from blobstore.memory import MemoryBlobStore
from blobstore.s3 import S3BlobStore


@pytest.fixture
async def opened():
    """Open a URL and close the store after the test."""
    stores = []

    def open_(url, **options):
        store = open_blobstore(url, **options)
        stores.append(store)
        return store

    yield open_
    for store in stores:
        await store.close()


@pytest.mark.parametrize(
    ("url", "expected_url"),
    [("memory://", "memory://"), ("memory://unit-tests", "memory://unit-tests")],
)
async def test_memory_urls(opened, url, expected_url):
    store = opened(url)
    assert isinstance(store, MemoryBlobStore)
    assert store.url == expected_url


async def test_memory_urls_open_independent_stores(opened):
    first, second = opened("memory://same"), opened("memory://same")
    digest = compute_digest(b"only in the first")
    await first.put(digest, b"only in the first")
    assert not await second.exists(digest)


@pytest.mark.parametrize(
    ("url", "root"),
    [
        ("file:///var/lib/skillreg/blobs", "/var/lib/skillreg/blobs"),
        ("file://localhost/srv/blobs", "/srv/blobs"),
        ("file:///tmp/my%20blobs", "/tmp/my blobs"),
    ],
)
async def test_absolute_file_urls(opened, url, root):
    store = opened(url)
    assert isinstance(store, LocalBlobStore)
    assert store.root == Path(root)


@pytest.mark.parametrize(
    ("url", "relative"),
    [
        ("file://./.skillreg/blobs", ".skillreg/blobs"),
        ("file://./relative/path", "relative/path"),
        ("file://.", ""),
    ],
)
async def test_relative_file_urls_are_relative_to_the_working_directory(
    opened, tmp_path, monkeypatch, url, relative
):
    monkeypatch.chdir(tmp_path)
    store = opened(url)
    assert isinstance(store, LocalBlobStore)
    assert store.root == tmp_path / relative


async def test_local_url_reopens_the_same_store(opened, tmp_path):
    store = opened((tmp_path / "blobs").as_uri())
    await store.ensure()
    digest = compute_digest(b"persisted")
    await store.put(digest, b"persisted")

    assert await opened(store.url).get(digest) == b"persisted"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("s3://bucket", ("bucket", "", None, None)),
        ("s3://my-bucket/a/b/", ("my-bucket", "a/b", None, None)),
        (
            "s3://my.bucket.v2/blobs?endpoint_url=http://127.0.0.1:9000&region=us-east-1",
            ("my.bucket.v2", "blobs", "http://127.0.0.1:9000", "us-east-1"),
        ),
        (
            "s3://bucket/blobs?endpoint_url=https%3A%2F%2Fminio.internal%3A9000",
            ("bucket", "blobs", "https://minio.internal:9000", None),
        ),
    ],
)
async def test_s3_urls(opened, url, expected):
    store = opened(url)
    assert isinstance(store, S3BlobStore)
    assert (store.bucket, store.prefix, store._endpoint_url, store._region) == expected
    assert opened(store.url).url == store.url


async def test_s3_options_are_passed_on(opened):
    store = opened("s3://bucket", max_concurrency=3, retry_attempts=7)
    assert isinstance(store, S3BlobStore)
    assert (store.max_concurrency, store.retry_attempts) == (3, 7)


BAD_URLS = {
    "empty": ("", "no scheme"),
    "bare-path": ("/var/lib/blobs", "no scheme"),
    "gs": ("gs://bucket", "unknown scheme 'gs'"),
    "http": ("http://example.com/blobs", "unknown scheme 'http'"),
    "fragment": ("file:///srv/blobs#x", "no '#fragment'"),
    "memory-path": ("memory://a/b", "name only"),
    "memory-query": ("memory://a?b=c", "name only"),
    "memory-name": ("memory://a b", "a memory store name"),
    "file-empty": ("file://", "must be absolute"),
    "file-no-slashes": ("file:relative/path", "must be absolute"),
    "file-host": ("file://host/srv/blobs", "name no host"),
    "file-parent": ("file://../blobs", "name no host"),
    "file-query": ("file:///srv/blobs?sync=0", "no query parameters"),
    "file-nul": ("file:///srv/a%00b", "NUL"),
    "s3-empty": ("s3://", "no bucket"),
    "s3-no-bucket": ("s3:///prefix", "no bucket"),
    "s3-short-bucket": ("s3://ab", "shorter than 3"),
    "s3-bucket-case": ("s3://My_Bucket", "is not valid"),
    "s3-bucket-hyphen": ("s3://-bucket", "is not valid"),
    "s3-bucket-long": ("s3://" + "b" * 64, "is not valid"),
    "s3-port": ("s3://bucket:9000", "not a host and port"),
    "s3-dotdot": ("s3://bucket/a/../b", "'..'"),
    "s3-empty-segment": ("s3://bucket/a//b", "empty"),
    "s3-unknown-param": ("s3://bucket?retries=3", "unknown query parameter 'retries'"),
    "s3-bare-param": ("s3://bucket?region", "malformed query"),
    "s3-twice": ("s3://bucket?region=us-east-1&region=eu-west-1", "given twice"),
    "s3-blank": ("s3://bucket?endpoint_url=", "'endpoint_url' is empty"),
    "s3-endpoint-scheme": ("s3://bucket?endpoint_url=ftp://host", "http:// or https://"),
    "s3-endpoint-bare": ("s3://bucket?endpoint_url=localhost:9000", "http:// or https://"),
    "s3-endpoint-port": ("s3://bucket?endpoint_url=http://host:port", "malformed"),
    "s3-region": ("s3://bucket?region=US_EAST", "not a region name"),
}


@pytest.mark.parametrize(("url", "reason"), BAD_URLS.values(), ids=BAD_URLS.keys())
def test_bad_urls_are_refused_with_a_reason(url, reason):
    with pytest.raises(UnsupportedBlobURL) as refused:
        open_blobstore(url)
    assert reason in refused.value.reason
    assert refused.value.url == url
    assert isinstance(refused.value, ValueError)


SECRET_URLS = {
    "userinfo": ("s3://AKIAEXAMPLE:hunter2@bucket", "credentials do not belong"),
    "endpoint": ("s3://bucket?endpoint_url=http://AKIAEXAMPLE:hunter2@host", "credentials"),
    "encoded": (
        "s3://bucket?endpoint_url=http%3A%2F%2FAKIAEXAMPLE%3Ahunter2%40host",
        "credentials",
    ),
    "at-in-secret": ("s3://AKIAEXAMPLE:p@ss:hunter2@bucket", "credentials do not belong"),
}


@pytest.mark.parametrize(("url", "reason"), SECRET_URLS.values(), ids=SECRET_URLS.keys())
def test_credentials_in_urls_are_refused_and_never_echoed(url, reason):
    with pytest.raises(UnsupportedBlobURL) as refused:
        open_blobstore(url)
    assert reason in refused.value.reason
    assert "hunter2" not in str(refused.value)
    assert "hunter2" not in refused.value.url
    assert "AKIAEXAMPLE" not in str(refused.value)


@pytest.mark.s3
async def test_s3_url_round_trip(opened, s3_blob_url):
    store = opened(s3_blob_url)
    await store.check()
    digest = compute_digest(b"through the url")

    assert await store.put(digest, b"through the url") is True
    assert await store.get(digest) == b"through the url"
    assert [info.digest async for info in store.iter_digests()] == [digest]
