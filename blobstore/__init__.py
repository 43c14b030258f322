"""Content-addressed blob storage: the `BlobStore` protocol and its backends.

Backends: `memory://` (tests), `file://PATH` (local directory), `s3://BUCKET/PREFIX`
(S3 or any S3-compatible store). `open_blobstore(url)` picks one from a URL.
"""

from __future__ import annotations

from blobstore.base import BlobInfo, BlobStore
from blobstore.digest import check_digest, compute_digest, is_digest
from blobstore.errors import (
    BlobCorrupted,
    BlobNotFound,
    BlobStoreError,
    BlobStoreUnavailable,
    DigestMismatch,
    InvalidDigest,
    UnsupportedBlobURL,
)
from blobstore.factory import open_blobstore

__all__ = [
    "BlobCorrupted",
    "BlobInfo",
    "BlobNotFound",
    "BlobStore",
    "BlobStoreError",
    "BlobStoreUnavailable",
    "DigestMismatch",
    "InvalidDigest",
    "UnsupportedBlobURL",
    "check_digest",
    "compute_digest",
    "is_digest",
    "open_blobstore",
]
