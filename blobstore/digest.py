"""BLAKE3 content digests: computing them and validating them before any path is built."""

from __future__ import annotations

import re
from typing import Final

from blake3 import blake3

from blobstore.errors import InvalidDigest

DIGEST_HEX_LENGTH: Final = 64
_DIGEST = re.compile(r"[0-9a-f]{64}")


def compute_digest(data: bytes | bytearray | memoryview) -> str:
    """Return the lower-case hex BLAKE3 digest of `data`."""
    return blake3(data).hexdigest()


def is_digest(value: object) -> bool:
    """Return True if `value` is exactly 64 lower-case hex characters."""
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


def check_digest(value: object) -> str:
    """Return `value` if it is a well-formed digest, else raise `InvalidDigest`.

    Every store calls this before it builds a path or a key from a digest, so that
    `../`, absolute paths, upper case and other lookalikes never reach the filesystem.
    """
    if not is_digest(value):
        raise InvalidDigest(repr(value)[:100])
    assert isinstance(value, str)
    return value


def sharded_path(digest: str) -> str:
    """Return the store-relative location `ab/cd/<digest>` of a (checked) digest.

    Both persistent backends use this layout: two levels of 256 shards keep every
    directory (or S3 listing level) small even with millions of objects.
    """
    digest = check_digest(digest)
    return f"{digest[:2]}/{digest[2:4]}/{digest}"


def digest_from_sharded(relative: str) -> str | None:
    """Return the digest stored at the store-relative location `relative`, or None.

    None for anything that is not exactly `sharded_path(d)` for a valid `d`: stray
    files, objects in the wrong shard, names that merely look like digests.
    """
    digest = relative.rpartition("/")[2]
    if not is_digest(digest) or relative != sharded_path(digest):
        return None
    return digest
