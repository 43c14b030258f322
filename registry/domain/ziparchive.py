"""A package as a reproducible zip: the same files always make the same bytes.

The discovery index (docs/distribution.md) publishes the SHA-256 of each archive, and a
client refuses an archive whose bytes do not hash to it. The digest may be computed by one
registry process and the bytes served by another, on another host, next week. Compressed
members would tie the bytes to the zlib build that deflated them (zlib and zlib-ng, or two
zlib releases, make different streams from the same input), so members are *stored*
(method 0): the bytes depend on the files and on this module only. `FORMAT` names this
layout; a change to it is a new name, so digests recorded for the old one are never
served with new bytes.

The layout, nothing more: for each file in manifest order (the UTF-8 bytes of its path), a
local header and the bytes; then the central directory and the end record. No directory
entries, extra fields, comments or data descriptors. Every entry carries the UTF-8 name
flag, the DOS epoch (1980-01-01 00:00) as its time, "made by Unix" and the mode of a
regular file (0644, or 0755 when executable) as its external attributes, so an entry can
never be read as a link, a device or a directory. Paths are the package's own, relative to
the skill folder: the archive's root is the skill folder, as the discovery spec requires.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from typing import Final

from registry.domain.model import PackageFile

FORMAT: Final = "zip-v1"

_LOCAL: Final = struct.Struct("<IHHHHHIIIHH")
_CENTRAL: Final = struct.Struct("<IHHHHHHIIIHHHHHII")
_END: Final = struct.Struct("<IHHHHIIH")
_LOCAL_SIG: Final = 0x04034B50
_CENTRAL_SIG: Final = 0x02014B50
_END_SIG: Final = 0x06054B50
_VERSION: Final = 20  # 2.0: what every reader understands for stored members
_MADE_BY_UNIX: Final = (3 << 8) | _VERSION
_UTF8: Final = 0x0800
_STORED: Final = 0
_DOS_TIME: Final = 0
_DOS_DATE: Final = (0 << 9) | (1 << 5) | 1  # 1980-01-01, the first date DOS can express
_REGULAR: Final = 0o100000
# Without zip64 records (deliberately absent) a zip holds at most this many entries, and
# sizes and offsets must fit in 32 bits.
MAX_ENTRIES: Final = 0xFFFF
MAX_BYTES: Final = 0xFFFFFFFF


def _mode(file: PackageFile) -> int:
    return _REGULAR | (0o755 if file.executable else 0o644)


def zip_package(files: Mapping[str, PackageFile]) -> bytes:
    """The reproducible zip of `files` (path -> file), entries in manifest order.

    Raises `ValueError` for more than `MAX_ENTRIES` files or an archive over `MAX_BYTES`,
    which a zip without zip64 records cannot describe.
    """
    if len(files) > MAX_ENTRIES:
        msg = f"{len(files)} files: a zip without zip64 holds at most {MAX_ENTRIES}"
        raise ValueError(msg)
    body = bytearray()
    directory = bytearray()
    for path in sorted(files, key=lambda p: p.encode("utf-8")):
        file = files[path]
        name = path.encode("utf-8")
        crc = zlib.crc32(file.data)
        size = len(file.data)
        offset = len(body)
        body += _LOCAL.pack(
            _LOCAL_SIG,
            _VERSION,
            _UTF8,
            _STORED,
            _DOS_TIME,
            _DOS_DATE,
            crc,
            size,
            size,
            len(name),
            0,
        )
        body += name
        body += file.data
        directory += _CENTRAL.pack(
            _CENTRAL_SIG,
            _MADE_BY_UNIX,
            _VERSION,
            _UTF8,
            _STORED,
            _DOS_TIME,
            _DOS_DATE,
            crc,
            size,
            size,
            len(name),
            0,
            0,
            0,
            0,
            _mode(file) << 16,
            offset,
        )
        directory += name
        if len(body) + len(directory) > MAX_BYTES:
            msg = f"the archive passes {MAX_BYTES} bytes, which a zip without zip64 cannot hold"
            raise ValueError(msg)
    end = _END.pack(_END_SIG, 0, 0, len(files), len(files), len(directory), len(body), 0)
    return bytes(body + directory + end)
