"""S3BlobStore beyond the contract: key layout, checksums, retries, bucket lifecycle.

Faults are injected with botocore `before-send` handlers on the store's own client: a
handler that returns a response (or raises) replaces the HTTP exchange for that attempt,
deterministically, and counts the attempts. Backoff waits are zero (`retry_base_delay=0`).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import threading

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from blobstore import BlobNotFound, BlobStoreUnavailable, compute_digest, open_blobstore
from blobstore.s3 import S3BlobStore
from tests.harness.s3 import all_keys, empty_and_delete_bucket, unique_bucket_name

pytestmark = pytest.mark.s3


@pytest.fixture
async def make_store(s3_server, s3_session):
    stores = []

    def make(bucket, prefix="blobs", **options):
        options.setdefault("retry_base_delay", 0)
        store = S3BlobStore(bucket, prefix, endpoint_url=s3_server, session=s3_session, **options)
        stores.append(store)
        return store

    yield make
    for store in stores:
        await store.close()


@pytest.fixture
def s3_store(make_store, s3_bucket):
    return make_store(s3_bucket)


class _Body:
    def __init__(self, data):
        self._data = data

    def stream(self, **_):
        yield self._data


def error_response(status, code):
    body = f"<Error><Code>{code}</Code><Message>injected</Message></Error>".encode()
    return AWSResponse("http://injected", status, {"Content-Type": "application/xml"}, _Body(body))


class Faults:
    """A `before-send` handler that plays a script of outcomes, one per attempt.

    An outcome is an exception to raise, a `(status, code)` error response, or None to
    let the request through. Past the end of the script every request goes through, or
    the last outcome repeats with `forever=True`.
    """

    def __init__(self, store, operation, *outcomes, forever=False):
        self.attempts = 0
        self._outcomes = list(outcomes)
        self._forever = forever
        self._lock = threading.Lock()
        store._client.meta.events.register(f"before-send.s3.{operation}", self)

    def __call__(self, **_):
        with self._lock:
            self.attempts += 1
            index = self.attempts - 1
        if index < len(self._outcomes):
            outcome = self._outcomes[index]
        elif self._forever:
            outcome = self._outcomes[-1]
        else:
            return None
        if isinstance(outcome, BaseException):
            raise outcome
        if outcome is None:
            return None
        return error_response(*outcome)


async def listing(store):
    return [info.digest async for info in store.iter_digests()]


def blob(data=b"s3 blob"):
    return compute_digest(data), data


@pytest.mark.parametrize("prefix", ["blobs", "", "team/a/blobs"], ids=["prefix", "none", "deep"])
async def test_key_layout(make_store, s3_bucket, s3_client, prefix):
    store = make_store(s3_bucket, prefix)
    digest, data = blob()

    await store.put(digest, data)

    relative = f"{digest[:2]}/{digest[2:4]}/{digest}"
    expected = f"{prefix}/{relative}" if prefix else relative
    assert all_keys(s3_client, s3_bucket) == {expected}
    assert store.key_for(digest) == expected


async def test_prefix_slashes_are_trimmed(make_store, s3_bucket):
    assert make_store(s3_bucket, "/blobs/").prefix == "blobs"


async def test_put_sends_a_sha256_checksum_of_the_bytes(s3_store):
    digest, data = blob()
    sent = []
    s3_store._client.meta.events.register(
        "before-send.s3.PutObject", lambda request, **_: sent.append(request.headers)
    )

    await s3_store.put(digest, data)

    expected = base64.b64encode(hashlib.sha256(data).digest())
    assert [headers["x-amz-checksum-sha256"] for headers in sent] == [expected]


async def test_a_new_blob_costs_one_request_and_an_existing_one_is_not_rewritten(s3_store):
    digest, data = blob()
    sent = []
    s3_store._client.meta.events.register(
        "before-send.s3.*",
        lambda request, **_: sent.append((request.method, dict(request.headers))),
    )

    assert await s3_store.put(digest, data) is True
    assert [method for method, _ in sent] == ["PUT"]
    assert sent[0][1]["If-None-Match"] in ("*", b"*")

    sent.clear()
    assert await s3_store.put(digest, data) is False
    # the conditional PUT is refused (412), a HEAD confirms the size, nothing is rewritten
    assert [method for method, _ in sent] == ["PUT", "HEAD"]
    assert await s3_store.get(digest) == data


async def test_a_wrong_sized_object_under_the_digest_is_replaced(s3_store, s3_client):
    digest, data = blob()
    await s3_store.put(digest, data)
    s3_client.put_object(Bucket=s3_store.bucket, Key=s3_store.key_for(digest), Body=data[:-1])
    assert await s3_store.put(digest, data) is True
    assert await s3_store.get(digest) == data


async def test_an_object_deleted_between_the_refused_put_and_the_head_is_stored(
    s3_store, s3_client
):
    """GC deletes objects while writers upload: the existing object may vanish mid-put."""
    digest, data = blob()
    await s3_store.put(digest, data)

    def delete_first(**_):
        s3_client.delete_object(Bucket=s3_store.bucket, Key=s3_store.key_for(digest))

    s3_store._client.meta.events.register("before-send.s3.HeadObject", delete_first)
    assert await s3_store.put(digest, data) is True
    assert await s3_store.get(digest) == data


TRANSIENT = {
    "connection-closed": ConnectionClosedError(endpoint_url="http://injected"),
    "endpoint-connection": EndpointConnectionError(endpoint_url="http://injected"),
    "read-timeout": ReadTimeoutError(endpoint_url="http://injected"),
    "500-internal": (500, "InternalError"),
    "503-slowdown": (503, "SlowDown"),
    "503-unavailable": (503, "ServiceUnavailable"),
    "400-request-timeout": (400, "RequestTimeout"),
    "429-throttled": (429, "TooManyRequests"),
}


@pytest.mark.parametrize("fault", TRANSIENT.values(), ids=TRANSIENT.keys())
async def test_transient_failure_on_first_attempt_is_retried(s3_store, fault):
    digest, data = blob()
    faults = Faults(s3_store, "PutObject", fault)

    assert await s3_store.put(digest, data) is True

    assert faults.attempts == 2
    assert await s3_store.get(digest) == data


async def test_get_retries_a_dropped_connection(s3_store):
    digest, data = blob()
    await s3_store.put(digest, data)
    faults = Faults(s3_store, "GetObject", ConnectionClosedError(endpoint_url="http://x"))

    assert await s3_store.get(digest) == data
    assert faults.attempts == 2


async def test_listing_retries_a_failed_page_and_stays_complete(make_store, s3_bucket):
    store = make_store(s3_bucket, page_size=10)
    blobs = dict(blob(f"blob {n}".encode()) for n in range(25))
    await asyncio.gather(*(store.put(digest, data) for digest, data in blobs.items()))
    # First page through, the second fails once, then the rest go through.
    faults = Faults(store, "ListObjectsV2", None, (503, "SlowDown"))

    assert sorted(await listing(store)) == sorted(blobs)
    assert faults.attempts == 4


@pytest.mark.parametrize("attempts", [1, 2, 4])
async def test_a_5xx_storm_ends_unavailable_after_the_bounded_attempts(
    make_store, s3_bucket, attempts
):
    store = make_store(s3_bucket, retry_attempts=attempts)
    digest, data = blob()
    faults = Faults(store, "PutObject", (503, "SlowDown"), forever=True)

    with pytest.raises(BlobStoreUnavailable, match=f"put .*{s3_bucket}.*SlowDown") as failed:
        await store.put(digest, data)

    assert faults.attempts == attempts
    assert isinstance(failed.value.__cause__, ClientError)
    assert not await store.exists(digest)


async def test_permanent_errors_are_not_retried(s3_store):
    digest, data = blob()
    faults = Faults(s3_store, "PutObject", (403, "AccessDenied"), forever=True)

    with pytest.raises(BlobStoreUnavailable, match="AccessDenied"):
        await s3_store.put(digest, data)
    assert faults.attempts == 1


async def test_missing_key_is_translated_and_not_retried(s3_store):
    digest, _ = blob()
    faults = Faults(s3_store, "GetObject")

    with pytest.raises(BlobNotFound) as missing:
        await s3_store.get(digest)

    assert faults.attempts == 1
    assert missing.value.__cause__ is None
    assert missing.value.__suppress_context__


async def test_concurrency_is_bounded_by_max_concurrency(make_store, s3_bucket, monkeypatch):
    store = make_store(s3_bucket, max_concurrency=2)
    real_put = store._client.put_object
    # Two uploads must meet here (proving two run at once); a third running alongside
    # them would push the high-water mark past two.
    meet = threading.Barrier(2, timeout=10)
    lock = threading.Lock()
    in_flight = high_water = 0

    def put_object(**kwargs):
        nonlocal in_flight, high_water
        with lock:
            in_flight += 1
            high_water = max(high_water, in_flight)
        try:
            meet.wait()
            return real_put(**kwargs)
        finally:
            with lock:
                in_flight -= 1

    monkeypatch.setattr(store._client, "put_object", put_object)
    blobs = dict(blob(f"bounded {n}".encode()) for n in range(8))

    assert all(await asyncio.gather(*(store.put(d, data) for d, data in blobs.items())))
    assert high_water == 2


async def test_ensure_creates_a_missing_bucket(make_store, s3_client):
    bucket = unique_bucket_name()
    store = make_store(bucket)
    try:
        with pytest.raises(BlobStoreUnavailable, match=f"bucket '{bucket}' does not exist"):
            await store.check()

        await store.ensure()
        await store.ensure()

        await store.check()
        digest, data = blob()
        assert await store.put(digest, data) is True
        assert await store.get(digest) == data
    finally:
        empty_and_delete_bucket(s3_client, bucket)


async def test_ensure_creates_the_bucket_in_the_configured_region(make_store, s3_client):
    bucket = unique_bucket_name()
    store = make_store(bucket, region="eu-west-1")
    try:
        await store.ensure()
        location = s3_client.get_bucket_location(Bucket=bucket)["LocationConstraint"]
        assert location == "eu-west-1"
    finally:
        empty_and_delete_bucket(s3_client, bucket)


async def test_a_missing_bucket_is_unavailable_not_missing_blobs(make_store):
    store = make_store(unique_bucket_name())
    digest, data = blob()

    for call in (
        lambda: store.put(digest, data),
        lambda: store.get(digest),
        lambda: store.delete(digest),
        lambda: listing(store),
    ):
        with pytest.raises(BlobStoreUnavailable, match="NoSuchBucket"):
            await call()
    # HEAD responses carry no error body, so S3 cannot say which of key or bucket is
    # missing: `exists` reports False, and `check()` is what tells the two apart.
    assert not await store.exists(digest)


async def test_prefixes_isolate_stores_sharing_a_bucket(make_store, s3_bucket):
    short, longer = make_store(s3_bucket, "a"), make_store(s3_bucket, "ab")
    short_digest, short_data = blob(b"in a")
    long_digest, long_data = blob(b"in ab")
    await short.put(short_digest, short_data)
    await longer.put(long_digest, long_data)

    assert await listing(short) == [short_digest]
    assert await listing(longer) == [long_digest]
    assert not await short.exists(long_digest)


async def test_stray_keys_are_skipped_by_iter_digests(s3_store, s3_client, s3_bucket):
    digest, data = blob()
    await s3_store.put(digest, data)
    elsewhere = compute_digest(b"elsewhere")
    for key in (
        f"blobs/{digest[:2]}/{digest[2:4]}/notes.txt",
        f"blobs/{digest[:2]}/{digest[2:4]}/{elsewhere}",
        f"blobs/{elsewhere}",
        f"blobs/zz/yy/{elsewhere}",
        f"{elsewhere[:2]}/{elsewhere[2:4]}/{elsewhere}",
    ):
        s3_client.put_object(Bucket=s3_bucket, Key=key, Body=b"stray")

    assert await listing(s3_store) == [digest]


async def test_url_reopens_the_same_store(make_store, s3_bucket):
    store = make_store(s3_bucket, "team/blobs", region="us-east-1")
    digest, data = blob()
    await store.put(digest, data)

    reopened = open_blobstore(store.url)
    try:
        assert isinstance(reopened, S3BlobStore)
        assert reopened.url == store.url
        assert await reopened.get(digest) == data
    finally:
        await reopened.close()


async def test_retries_are_logged_at_debug_level_with_the_operation(make_store, s3_bucket, caplog):
    """Issue 15, item 9: no "Retrying <unknown> ..." warnings on a user's terminal."""
    store = make_store(s3_bucket, retry_attempts=3)
    digest, data = blob()
    Faults(store, "PutObject", (503, "SlowDown"), forever=True)
    caplog.set_level(logging.DEBUG, logger="blobstore.s3")
    with pytest.raises(BlobStoreUnavailable):
        await store.put(digest, data)
    retries = [r for r in caplog.records if r.name == "blobstore.s3"]
    assert [r.levelno for r in retries] == [logging.DEBUG, logging.DEBUG]
    assert [r.getMessage().split(" (")[0] for r in retries] == [
        f"S3 put {store.key_for(digest)} in bucket {s3_bucket!r} failed"
    ] * 2
    assert "attempt 1 of 3: ClientError" in retries[0].getMessage()
    assert "<unknown>" not in caplog.text
