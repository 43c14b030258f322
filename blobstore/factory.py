"""`open_blobstore(url)`: the one place a blob store URL is turned into a backend.

- `memory://` or `memory://NAME`: a fresh, empty `MemoryBlobStore` (tests).
- `file:///ABS/PATH` (or `file://localhost/ABS/PATH`): a `LocalBlobStore` at that path.
- `file://./REL/PATH`: a `LocalBlobStore` at a path relative to the working directory
  (`file://./.skillreg/blobs` is the embedded default).
- `s3://BUCKET[/PREFIX][?endpoint_url=URL&region=REGION]`: an `S3BlobStore`. Credentials
  come from boto3's default chain, never from the URL; a URL carrying them is refused.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit

from blobstore.errors import UnsupportedBlobURL

if TYPE_CHECKING:
    from blobstore.base import BlobStore

# Backends are imported when a URL asks for them (_lazy_backends): `import blobstore` stays
# light (no boto3), so pure code may use `blobstore.digest` without loading any adapter.
_S3_PARAMETERS: Final = ("endpoint_url", "region")
_MEMORY_NAME: Final = re.compile(r"[A-Za-z0-9._-]*")
_REGION: Final = re.compile(r"[a-z0-9-]+")
_USERINFO: Final = re.compile(r"//[^/?#]*@")


def open_blobstore(
    url: str,
    *,
    max_concurrency: int = 16,
    retry_attempts: int = 4,
    connect_timeout: float = 5.0,
    read_timeout: float = 20.0,
) -> BlobStore:
    """Build the blob store a URL names; raise `UnsupportedBlobURL` saying what is wrong.

    `max_concurrency`, `retry_attempts` and the timeouts (seconds) apply to network
    backends (S3). The store is
    not created or contacted: call `ensure()` to create it and `check()` to probe it.
    """
    shown = _redact(url)
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise UnsupportedBlobURL(shown, f"malformed URL: {exc}") from None
    if parts.fragment:
        raise UnsupportedBlobURL(shown, "a blob store URL takes no '#fragment'")
    match parts.scheme:
        case "memory":
            return _open_memory(shown, parts)
        case "file":
            return _open_local(shown, parts)
        case "s3":
            return _open_s3(
                shown,
                parts,
                max_concurrency=max_concurrency,
                retry_attempts=retry_attempts,
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
            )
        case "":
            reason = "no scheme; expected memory://, file:// or s3://"
        case other:
            reason = f"unknown scheme {other!r}; expected memory://, file:// or s3://"
    raise UnsupportedBlobURL(shown, reason)


def _open_memory(shown: str, parts: SplitResult) -> BlobStore:
    if parts.path or parts.query:
        raise UnsupportedBlobURL(shown, "memory:// takes a name only (memory://NAME)")
    if not _MEMORY_NAME.fullmatch(parts.netloc):
        raise UnsupportedBlobURL(shown, "a memory store name is letters, digits, '.', '_', '-'")
    from blobstore.memory import MemoryBlobStore  # noqa: PLC0415 - backends load on demand

    return MemoryBlobStore(parts.netloc)


def _open_local(shown: str, parts: SplitResult) -> BlobStore:
    if parts.query:
        raise UnsupportedBlobURL(shown, "file:// URLs take no query parameters")
    path = unquote(parts.path)
    if "\x00" in path:
        raise UnsupportedBlobURL(shown, "the path contains a NUL character")
    match parts.netloc:
        case "." if not path or path.startswith("/"):
            # `file://./a/b` splits into host "." and path "/a/b": relative to the cwd.
            root = Path("." + path)
        case "" | "localhost" if path.startswith("/"):
            root = Path(path)
        case "" | "localhost":
            raise UnsupportedBlobURL(
                shown, "the path must be absolute (file:///abs/path) or file://./relative/path"
            )
        case _:
            raise UnsupportedBlobURL(
                shown,
                "file:// URLs name no host: use file:///abs/path or file://./relative/path",
            )
    from blobstore.local import LocalBlobStore  # noqa: PLC0415 - backends load on demand

    return LocalBlobStore(root)


def _open_s3(
    shown: str,
    parts: SplitResult,
    *,
    max_concurrency: int,
    retry_attempts: int,
    connect_timeout: float,
    read_timeout: float,
) -> BlobStore:
    if "@" in parts.netloc:
        raise UnsupportedBlobURL(
            shown,
            "credentials do not belong in the URL; boto3 reads them from the environment",
        )
    if ":" in parts.netloc:
        raise UnsupportedBlobURL(shown, "an s3:// URL names a bucket, not a host and port")
    bucket = parts.netloc
    if not bucket:
        raise UnsupportedBlobURL(shown, "no bucket: expected s3://BUCKET[/PREFIX]")
    options = _s3_options(shown, parts.query)
    try:
        from blobstore.s3 import S3BlobStore  # noqa: PLC0415 - backends load on demand

        return S3BlobStore(
            bucket,
            unquote(parts.path),
            endpoint_url=options.get("endpoint_url"),
            region=options.get("region"),
            max_concurrency=max_concurrency,
            retry_attempts=retry_attempts,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
        )
    except ValueError as exc:
        raise UnsupportedBlobURL(shown, str(exc)) from None


def _s3_options(shown: str, query: str) -> dict[str, str]:
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError as exc:
        raise UnsupportedBlobURL(shown, f"malformed query: {exc}") from None
    options: dict[str, str] = {}
    for name, value in pairs:
        if name not in _S3_PARAMETERS:
            known = ", ".join(_S3_PARAMETERS)
            raise UnsupportedBlobURL(shown, f"unknown query parameter {name!r}; known: {known}")
        if name in options:
            raise UnsupportedBlobURL(shown, f"query parameter {name!r} is given twice")
        if not value:
            raise UnsupportedBlobURL(shown, f"query parameter {name!r} is empty")
        options[name] = value
    if "endpoint_url" in options:
        _check_endpoint(shown, options["endpoint_url"])
    region = options.get("region")
    if region is not None and not _REGION.fullmatch(region):
        raise UnsupportedBlobURL(shown, f"region {region!r} is not a region name")
    return options


def _check_endpoint(shown: str, endpoint: str) -> None:
    try:
        parts = urlsplit(endpoint)
        parts.port  # noqa: B018 (parsing the port is the check)
    except ValueError as exc:
        raise UnsupportedBlobURL(shown, f"endpoint_url is malformed: {exc}") from None
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise UnsupportedBlobURL(shown, "endpoint_url must be an http:// or https:// URL")
    if "@" in parts.netloc:
        raise UnsupportedBlobURL(shown, "endpoint_url must not carry credentials")


def _redact(url: str) -> str:
    """Return `url` with any user-info masked, so that an error never echoes a secret.

    Also looks inside percent-encoded parts (an `endpoint_url` in the query).
    """
    decoded = unquote(url)
    if _USERINFO.search(decoded) is None:
        return url
    return _USERINFO.sub("//***@", decoded)
