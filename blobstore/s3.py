"""A blob store in an S3 bucket (or any S3-compatible store): `<prefix>/ab/cd/<64 hex>`.

Every request runs in the store's own worker threads under an `asyncio.Semaphore`, so at
most `max_concurrency` requests are in flight and the event loop never blocks. botocore's
own retries are off; transient failures are retried here with tenacity (exponential
backoff, full jitter, bounded attempts), which is safe because every request this store
makes is idempotent. botocore errors are translated at this seam: a missing key becomes
`BlobNotFound`, anything else that does not clear up becomes `BlobStoreUnavailable`.

Credentials come from boto3's default chain (environment, config files, instance roles),
never from the store's URL.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import functools
import hashlib
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC
from typing import TYPE_CHECKING, Final, TypeVar, cast
from urllib.parse import urlencode

import boto3
import botocore.handlers
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    FlexibleChecksumError,
    HTTPClientError,
    IncompleteReadError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from blobstore.base import BlobInfo
from blobstore.digest import (
    check_digest,
    compute_digest,
    digest_from_sharded,
    sharded_path,
)
from blobstore.errors import (
    BlobCorrupted,
    BlobNotFound,
    BlobStoreError,
    BlobStoreUnavailable,
    DigestMismatch,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping

    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.literals import BucketLocationConstraintType
    from mypy_boto3_s3.type_defs import ListObjectsV2OutputTypeDef

_T = TypeVar("_T")
_log = logging.getLogger(__name__)

# S3 bucket naming rules (the subset that matters for path-style access).
_BUCKET_NAME: Final = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_MAX_PAGE_SIZE: Final = 1000
_HTTP_SERVER_ERROR: Final = 500
_HTTP_TOO_MANY_REQUESTS: Final = 429

# Error codes S3 and S3-compatible stores use for "try again later". RequestTimeout comes
# with status 400, so the status alone does not find it.
_TRANSIENT_CODES: Final = frozenset(
    {
        "InternalError",
        # Two conditional PUTs of one key raced; S3 asks the loser to retry.
        "ConditionalRequestConflict",
        "RequestTimeout",
        "ServiceUnavailable",
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestThrottled",
        "TooManyRequests",
    }
)
# HEAD responses have no body, so a missing key on HEAD reports the bare status as its code.
_NOT_FOUND_CODES: Final = frozenset({"NoSuchKey", "404", "NotFound"})
_EXISTS_CODES: Final = frozenset({"PreconditionFailed", "412"})
# Connection failures, read timeouts, a body cut short, or a response checksum that did not
# match: the request may simply be sent again.
_TRANSIENT_ERRORS: Final = (
    BotoConnectionError,
    HTTPClientError,
    IncompleteReadError,
    FlexibleChecksumError,
)


def check_bucket_name(bucket: str) -> str:
    """Return `bucket` if it is a valid S3 bucket name, else raise `ValueError`."""
    if len(bucket) < 3:  # noqa: PLR2004 (S3's documented minimum)
        raise ValueError(f"bucket name {bucket!r} is shorter than 3 characters")
    if not _BUCKET_NAME.fullmatch(bucket) or ".." in bucket:
        raise ValueError(
            f"bucket name {bucket!r} is not valid: 3-63 characters of lower-case letters, "
            "digits, '.' and '-', starting and ending with a letter or digit"
        )
    return bucket


def normalize_prefix(prefix: str) -> str:
    """Return `prefix` without surrounding slashes, refusing empty, `.` or `..` segments."""
    stripped = prefix.strip("/")
    if stripped and any(segment in {"", ".", ".."} for segment in stripped.split("/")):
        raise ValueError(f"prefix {prefix!r} has an empty, '.' or '..' segment")
    return stripped


class S3BlobStore:
    """A `BlobStore` in an S3 bucket, under an optional key prefix.

    One boto3 client (thread-safe) serves every call. `retry_base_delay` and
    `retry_max_delay` shape the backoff (tests set the base to 0); `page_size` is the
    `MaxKeys` of each listing request. `session` is the boto3 session the client is made
    from (a new one by default); sharing one makes creating many stores cheap.
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        max_concurrency: int = 16,
        retry_attempts: int = 4,
        connect_timeout: float = 5.0,
        read_timeout: float = 20.0,
        retry_base_delay: float = 0.05,
        retry_max_delay: float = 2.0,
        page_size: int = _MAX_PAGE_SIZE,
        session: boto3.session.Session | None = None,
    ) -> None:
        """Validate the settings and create the client; nothing is sent until first use."""
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        if retry_attempts < 1:
            raise ValueError("retry_attempts must be at least 1")
        if not 1 <= page_size <= _MAX_PAGE_SIZE:
            raise ValueError(f"page_size must be between 1 and {_MAX_PAGE_SIZE}")
        if retry_base_delay < 0 or retry_max_delay < 0:
            raise ValueError("retry delays must not be negative")
        self._bucket = check_bucket_name(bucket)
        self._prefix = normalize_prefix(prefix)
        self._endpoint_url = endpoint_url
        self._region = region
        self._max_concurrency = max_concurrency
        self._retry_attempts = retry_attempts
        self._wait = wait_random_exponential(multiplier=retry_base_delay, max=retry_max_delay)
        self._page_size = page_size
        config = Config(
            max_pool_connections=max_concurrency,
            # One attempt per botocore call: retrying is done above it, once, with tenacity.
            retries={"mode": "standard", "total_max_attempts": 1},
            # botocore waits 60 s for each by default; a store that accepts connections and
            # never answers would hold a write for minutes (times the retries).
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            # Custom endpoints (MinIO, moto, Ceph) rarely resolve bucket subdomains.
            s3={"addressing_style": "path"} if endpoint_url else {},
        )
        # Not boto3's default session: that one is process-global and not thread-safe.
        session = session or boto3.session.Session()
        self._client: S3Client = session.client(
            "s3", endpoint_url=endpoint_url, region_name=region, config=config
        )
        # No `Expect: 100-continue`: when the connection is cut right after the interim
        # `100 Continue`, botocore's reader loops on an empty socket at 100% CPU for ever.
        # Without it a refused upload costs its body's bytes once, which is bounded.
        self._client.meta.events.unregister("before-call.s3", botocore.handlers.add_expect_header)
        # Our own threads, as many as the semaphore admits: the loop's default executor is
        # small (CPU count + 4) and shared, and `close()` must be able to release them.
        self._executor = ThreadPoolExecutor(max_concurrency, thread_name_prefix="blobstore-s3")
        self._slots = asyncio.Semaphore(max_concurrency)
        self._closed = False

    @property
    def url(self) -> str:
        """`s3://bucket/prefix` with the endpoint and region as query parameters."""
        query = {
            key: value
            for key, value in (("endpoint_url", self._endpoint_url), ("region", self._region))
            if value
        }
        path = f"/{self._prefix}" if self._prefix else ""
        suffix = f"?{urlencode(query)}" if query else ""
        return f"s3://{self._bucket}{path}{suffix}"

    @property
    def bucket(self) -> str:
        """The bucket name."""
        return self._bucket

    @property
    def prefix(self) -> str:
        """The key prefix, without surrounding slashes ('' for none)."""
        return self._prefix

    @property
    def max_concurrency(self) -> int:
        """The most requests this store has in flight at once."""
        return self._max_concurrency

    @property
    def retry_attempts(self) -> int:
        """How many times one request is tried before the store gives up."""
        return self._retry_attempts

    def key_for(self, digest: str) -> str:
        """Return the object key of `digest`: `<prefix>/ab/cd/<digest>`."""
        relative = sharded_path(digest)
        return f"{self._prefix}/{relative}" if self._prefix else relative

    async def put(self, digest: str, data: bytes) -> bool:
        """Verify `data` and upload it unless an object of that size exists.

        One request in the common case: a conditional PUT (`If-None-Match: *`) stores a new
        object and is refused (412) for an existing one; only then does a HEAD check the
        existing object's size, and a wrong-sized object (or one deleted since) is
        replaced. A store that ignores the condition overwrites the object with the same
        bytes, which is harmless. The upload carries a SHA-256 checksum of the verified
        bytes, so S3 refuses a body damaged in transit instead of storing it.
        """
        key = self._enter(digest)
        # Hashing is CPU work: it runs on the loop's default threads, leaving this store's
        # own threads to the network requests the semaphore admits.
        checksum = await asyncio.to_thread(_checked_sha256, digest, data)
        try:
            await self._upload(key, data, checksum, if_absent=True)
        except _ExistsError:
            try:
                head = await self._request(
                    "head",
                    key,
                    functools.partial(self._client.head_object, Bucket=self._bucket, Key=key),
                )
            except _MissingError:
                # Deleted between the refused PUT and the HEAD (garbage collection does
                # that, concurrently with uploads): store it after all.
                head = None
            if head is not None and head["ContentLength"] == len(data):
                return False
            await self._upload(key, data, checksum, if_absent=False)
        return True

    async def _upload(self, key: str, data: bytes, checksum: str, *, if_absent: bool) -> None:
        client, bucket = self._client, self._bucket
        if if_absent:
            call = functools.partial(
                client.put_object,
                Bucket=bucket,
                Key=key,
                Body=data,
                ContentLength=len(data),
                ChecksumSHA256=checksum,
                IfNoneMatch="*",
            )
        else:
            call = functools.partial(
                client.put_object,
                Bucket=bucket,
                Key=key,
                Body=data,
                ContentLength=len(data),
                ChecksumSHA256=checksum,
            )
        await self._request("put", key, call)

    async def put_many(self, blobs: Mapping[str, bytes], *, concurrency: int = 8) -> frozenset[str]:
        """Upload every blob, at most `concurrency` requests of this call in flight.

        The first failure cancels the rest and is raised.
        """
        gate = asyncio.Semaphore(concurrency)
        new: set[str] = set()

        async def one(digest: str, data: bytes) -> None:
            async with gate:
                if await self.put(digest, data):
                    new.add(digest)

        try:
            async with asyncio.TaskGroup() as group:
                for digest, data in blobs.items():
                    group.create_task(one(digest, data))
        except* BlobStoreError as failures:
            raise failures.exceptions[0] from None
        return frozenset(new)

    async def get(self, digest: str) -> bytes:
        """Download the object and verify that it hashes to `digest`."""
        key = self._enter(digest)
        try:
            data = await self._request("get", key, functools.partial(self._read_object, key))
        except _MissingError:
            raise BlobNotFound(digest) from None
        actual = await asyncio.to_thread(compute_digest, data)
        if actual != digest:
            raise BlobCorrupted(digest, actual)
        return data

    async def exists(self, digest: str) -> bool:
        """Return True if an object is stored under `digest` (not verified)."""
        return await self.stat(digest) is not None

    async def stat(self, digest: str) -> BlobInfo | None:
        """Size and last-modified time (UTC) of the object, or None."""
        key = self._enter(digest)
        try:
            head = await self._request(
                "head",
                key,
                functools.partial(self._client.head_object, Bucket=self._bucket, Key=key),
            )
        except _MissingError:
            return None
        return BlobInfo(digest, head["ContentLength"], head["LastModified"].astimezone(UTC))

    async def delete(self, digest: str) -> None:
        """Delete the object; S3 reports success for a missing key too."""
        key = self._enter(digest)
        await self._request(
            "delete",
            key,
            functools.partial(self._client.delete_object, Bucket=self._bucket, Key=key),
        )

    async def iter_digests(self) -> AsyncIterator[BlobInfo]:
        """Every object under the prefix, one listing page in memory at a time.

        Keys that are not `<prefix>/ab/cd/<digest>` for a valid digest are skipped.
        """
        self._check_open()
        # Pages are requested one by one with the continuation token rather than through
        # botocore's paginator: a paginator cannot resume after a failed page, whereas a
        # single `list_objects_v2` call can be retried like any other idempotent request.
        list_prefix = f"{self._prefix}/" if self._prefix else ""
        token: str | None = None
        while True:
            page = await self._request(
                "list", list_prefix or "/", functools.partial(self._list_page, list_prefix, token)
            )
            for item in page.get("Contents", []):
                digest = digest_from_sharded(item["Key"].removeprefix(list_prefix))
                if digest is not None:
                    yield BlobInfo(digest, item["Size"], item["LastModified"].astimezone(UTC))
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return

    async def ensure(self) -> None:
        """Create the bucket unless it exists (in `region` if one is set)."""
        self._check_open()
        try:
            await self._request("head bucket", self._bucket, self._head_bucket)
        except _MissingError:
            pass
        else:
            return
        try:
            await self._request("create bucket", self._bucket, self._create_bucket)
        except BlobStoreUnavailable as exc:
            # Another process created it between our HEAD and CREATE.
            if _error_code(exc.__cause__) != "BucketAlreadyOwnedByYou":
                raise

    async def check(self) -> None:
        """Raise `BlobStoreUnavailable` unless the bucket exists and answers."""
        self._check_open()
        try:
            await self._request("head bucket", self._bucket, self._head_bucket)
        except _MissingError:
            raise BlobStoreUnavailable(
                f"bucket {self._bucket!r} does not exist at {self._endpoint_description()}; "
                "create it with ensure() (`skillreg init` does)"
            ) from None

    async def close(self) -> None:
        """Wait for requests in flight, then release the worker threads and connections."""
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self._executor.shutdown, wait=True)
        self._client.close()

    # ------------------------------------------------------------ worker-thread side

    def _read_object(self, key: str) -> bytes:
        # The body is read inside the retried call: a connection dropped mid-body is as
        # transient as one dropped before the headers.
        body = self._client.get_object(Bucket=self._bucket, Key=key)["Body"]
        try:
            return body.read()
        finally:
            body.close()

    def _list_page(self, list_prefix: str, token: str | None) -> ListObjectsV2OutputTypeDef:
        if token is None:
            return self._client.list_objects_v2(
                Bucket=self._bucket, Prefix=list_prefix, MaxKeys=self._page_size
            )
        return self._client.list_objects_v2(
            Bucket=self._bucket,
            Prefix=list_prefix,
            MaxKeys=self._page_size,
            ContinuationToken=token,
        )

    def _head_bucket(self) -> None:
        self._client.head_bucket(Bucket=self._bucket)

    def _create_bucket(self) -> None:
        # The client's region, which boto3 may have taken from the environment: the bucket
        # must be created where the client sends its requests. us-east-1 is the one region
        # that refuses an explicit LocationConstraint.
        region = self._region or self._client.meta.region_name
        if region and region not in {"us-east-1", "aws-global"}:
            self._client.create_bucket(
                Bucket=self._bucket,
                CreateBucketConfiguration={
                    "LocationConstraint": cast("BucketLocationConstraintType", region)
                },
            )
        else:
            self._client.create_bucket(Bucket=self._bucket)

    # ------------------------------------------------------------ the seam

    async def _request(self, operation: str, subject: str, call: Callable[[], _T]) -> _T:
        """Run one idempotent S3 request, retrying transient failures; translate errors.

        A missing key or bucket raises `_MissingError` for the caller to interpret;
        every other failure that outlives the retries is `BlobStoreUnavailable`.
        """
        self._check_open()
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._retry_attempts),
            wait=self._wait,
            retry=retry_if_exception(_is_transient),
            before_sleep=functools.partial(self._log_retry, operation, subject),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    async with self._slots:
                        return await self._offload(call)
        except ClientError as exc:
            if _error_code(exc) in _NOT_FOUND_CODES:
                raise _MissingError from None
            if _error_code(exc) in _EXISTS_CODES:
                raise _ExistsError from None
            raise BlobStoreUnavailable(self._describe(operation, subject, exc)) from exc
        except BotoCoreError as exc:
            raise BlobStoreUnavailable(self._describe(operation, subject, exc)) from exc
        raise AssertionError("tenacity returned without a result")  # pragma: no cover

    async def _offload(self, call: Callable[[], _T]) -> _T:
        # Like `asyncio.to_thread`, including the context copy, but on our own threads.
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        return await loop.run_in_executor(self._executor, context.run, call)

    def _enter(self, digest: str) -> str:
        key = self.key_for(check_digest(digest))
        self._check_open()
        return key

    def _check_open(self) -> None:
        if self._closed:
            raise BlobStoreUnavailable(f"{self.url} is closed")

    def _log_retry(self, operation: str, subject: str, state: RetryCallState) -> None:
        # Debug level: a retry that works is no news, and one that does not ends in a
        # `BlobStoreUnavailable` that says what failed. (tenacity's own `before_sleep_log`
        # names the function it retries, which it cannot know here: "Retrying <unknown>".)
        outcome = state.outcome
        error = outcome.exception() if outcome is not None else None
        delay = state.next_action.sleep if state.next_action is not None else 0.0
        _log.debug(
            "S3 %s %s in bucket %r failed (attempt %d of %d: %s); retrying in %.3f s",
            operation,
            subject,
            self._bucket,
            state.attempt_number,
            self._retry_attempts,
            type(error).__name__,
            delay,
        )

    def _describe(self, operation: str, subject: str, exc: BaseException) -> str:
        return (
            f"{operation} {subject} in bucket {self._bucket!r} at "
            f"{self._endpoint_description()}: {exc}"
        )

    def _endpoint_description(self) -> str:
        return self._endpoint_url or "the default AWS endpoint"


class _ExistsError(Exception):
    """A conditional PUT found an object already stored under the key."""


class _MissingError(Exception):
    """Internal: the request found no such key (or bucket). Never leaves this module."""


def _checked_sha256(digest: str, data: bytes) -> str:
    """Verify `data` against `digest`; return its base64 SHA-256 for S3 to check in transit."""
    actual = compute_digest(data)
    if actual != digest:
        raise DigestMismatch(digest, actual)
    return base64.b64encode(hashlib.sha256(data).digest()).decode("ascii")


def _error_code(exc: BaseException | None) -> str:
    if not isinstance(exc, ClientError):
        return ""
    return str(exc.response.get("Error", {}).get("Code", ""))


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return (
            _error_code(exc) in _TRANSIENT_CODES
            or status >= _HTTP_SERVER_ERROR
            or status == _HTTP_TOO_MANY_REQUESTS
        )
    return isinstance(exc, _TRANSIENT_ERRORS)
