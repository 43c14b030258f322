"""Reading a skill archive safely, in memory: `.zip`, `.tar.gz` and plain `.tar`.

Pure: the reader takes the archive's bytes and returns the package's files. Nothing is
written to a disk, no link is followed, no name is trusted. Every refusal is an
`ArchiveRejected(member, rule)` with one of the `RULE_*` names below, raised before the
package reaches the write path (which then applies the package rules: path rules, limits,
frontmatter, content check).

The order matters: everything that can be decided from the headers is decided before any
member's bytes are inflated.

- zip: the central directory is bounded before `zipfile` parses it, so that a directory
  of a million entries is refused without building a million objects, whatever the
  end-of-central-directory record claims: the record is found where `zipfile` finds it,
  its entry count must be within the bound and its directory size at least 46 bytes (the
  fixed part of an entry) per entry, and then the directory is walked, header by header
  (a few dozen bytes read each), counting at most the bound plus one entries: more is
  `too_many_entries`, a count other than the declared one is `corrupt`. A lying archive
  is refused as cheaply as an honest one that declares too many entries. Then every
  entry's header: its name (NUL, UTF-8, absolute, escaping,
  backslash), its type (links, devices, fifos, sockets are refused), encryption, the
  compression method, duplicates, the declared sizes (per entry and in total) and the
  compression ratio. Only then are members inflated, one at a time, never past the
  declared size plus one byte: an entry whose data is larger than declared, or smaller, or
  whose CRC differs, is refused.
- tar.gz: the tar headers live inside the compressed stream, so the stream is inflated in
  bounded steps and refused as soon as its output would pass the expanded-size bound or
  the ratio bound; nothing beyond those bounds is ever expanded. Then every header is
  checked as above before any member's data is read.

One common top-level folder is stripped when every file is under it (`pdf-report/SKILL.md`
becomes `SKILL.md`), because that is how people zip a folder.
"""

from __future__ import annotations

import io
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from registry.domain.model import PackageFile
from registry.errors import ArchiveRejected

MiB: Final = 1024 * 1024

RULE_UNKNOWN_FORMAT: Final = "unknown_format"
RULE_TOO_LARGE: Final = "archive_too_large"
RULE_CORRUPT: Final = "corrupt"
RULE_EMPTY: Final = "empty_archive"
RULE_TOO_MANY_ENTRIES: Final = "too_many_entries"
RULE_EXPANDED_SIZE: Final = "expanded_size"
RULE_COMPRESSION_RATIO: Final = "compression_ratio"
RULE_SYMLINK: Final = "symlink"
RULE_HARD_LINK: Final = "hard_link"
RULE_DEVICE: Final = "device"
RULE_FIFO: Final = "fifo"
RULE_SPECIAL: Final = "special_file"
RULE_ABSOLUTE: Final = "absolute_path"
RULE_ESCAPING: Final = "escaping_path"
RULE_BACKSLASH: Final = "backslash"
RULE_NUL: Final = "nul_byte"
RULE_NOT_UTF8: Final = "invalid_utf8"
RULE_DUPLICATE: Final = "duplicate_entry"
RULE_ENCRYPTED: Final = "encrypted"
RULE_COMPRESSION_METHOD: Final = "unsupported_compression"
RULE_LARGER_THAN_DECLARED: Final = "larger_than_declared"
RULE_SIZE_MISMATCH: Final = "size_mismatch"
RULE_CRC: Final = "crc_mismatch"
RULE_HEADER_MISMATCH: Final = "header_mismatch"

ARCHIVE_RULES: Final = (
    RULE_UNKNOWN_FORMAT,
    RULE_TOO_LARGE,
    RULE_CORRUPT,
    RULE_EMPTY,
    RULE_TOO_MANY_ENTRIES,
    RULE_EXPANDED_SIZE,
    RULE_COMPRESSION_RATIO,
    RULE_SYMLINK,
    RULE_HARD_LINK,
    RULE_DEVICE,
    RULE_FIFO,
    RULE_SPECIAL,
    RULE_ABSOLUTE,
    RULE_ESCAPING,
    RULE_BACKSLASH,
    RULE_NUL,
    RULE_NOT_UTF8,
    RULE_DUPLICATE,
    RULE_ENCRYPTED,
    RULE_COMPRESSION_METHOD,
    RULE_LARGER_THAN_DECLARED,
    RULE_SIZE_MISMATCH,
    RULE_CRC,
    RULE_HEADER_MISMATCH,
)
"""Every rule name this module can raise."""

# Below this many expanded bytes an entry (or a stream) is not checked for its ratio: a
# small, very compressible file (a page of padding) is no bomb, and the total is bounded.
RATIO_FLOOR: Final = 64 * 1024
# A tar stream holds a 512-byte header and up to 511 bytes of padding per member, extended
# headers for long names, and a zero-filled tail; the stream's bound allows for them.
_TAR_OVERHEAD_PER_ENTRY: Final = 3 * 512
_TAR_TAIL: Final = 20 * 512

_ZIP_MAGIC: Final = (b"PK\x03\x04", b"PK\x05\x06")
_GZIP_MAGIC: Final = b"\x1f\x8b"
_EOCD: Final = struct.Struct("<4s4H2LH")
_EOCD_SIG: Final = b"PK\x05\x06"
_ZIP64_LOCATOR: Final = struct.Struct("<4sLQL")
_ZIP64_LOCATOR_SIG: Final = b"PK\x06\x07"
_ZIP64_EOCD: Final = struct.Struct("<4sQ2H2L4Q")
_ZIP64_EOCD_SIG: Final = b"PK\x06\x06"
_LOCAL_HEADER: Final = struct.Struct("<4s5H3L2H")
_LOCAL_SIG: Final = b"PK\x03\x04"
_ZIP_UTF8_FLAG: Final = 0x800
_ZIP_ENCRYPTED_FLAG: Final = 0x1
_ZIP_METHODS: Final = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_MAX_COMMENT: Final = 0xFFFF
_CENTRAL: Final = struct.Struct("<4s4B4HL2L5H2L")  # a central directory header's fixed part
_CENTRAL_SIG: Final = b"PK\x01\x02"


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    """Bounds on an archive, checked before its members are expanded.

    `max_bytes` bounds the sum of the declared sizes of the files (and so what is ever
    expanded); `max_ratio` bounds expanded bytes per compressed byte, per zip entry and
    per compressed stream (above `RATIO_FLOOR` bytes).
    """

    max_entries: int = 1000
    max_bytes: int = 32 * MiB
    max_ratio: float = 100.0


@dataclass(frozen=True, slots=True)
class ArchiveContents:
    """The files of an archive, keyed by their path in the package."""

    format: str
    files: dict[str, PackageFile]
    entries: int
    stripped: str | None


EntryCallback = Callable[[str], None]
"""Called with a file's package path as its bytes are read (progress reporting)."""


@dataclass(frozen=True, slots=True)
class _Entry:
    """A member that passed the header checks: its path and what to read."""

    display: str
    path: str
    is_dir: bool
    size: int
    executable: bool
    member: zipfile.ZipInfo | tarfile.TarInfo


def detect_format(data: bytes) -> str | None:
    """`zip`, `tar.gz`, `tar`, or None, from the archive's first bytes."""
    if data.startswith(_ZIP_MAGIC):
        return "zip"
    if data.startswith(_GZIP_MAGIC):
        return "tar.gz"
    if data[257:262] == b"ustar":
        return "tar"
    return None


def read_archive(
    data: bytes, limits: ArchiveLimits | None = None, *, on_entry: EntryCallback | None = None
) -> ArchiveContents:
    """Return the files of the archive `data`, or raise `ArchiveRejected`."""
    limits = limits or ArchiveLimits()
    kind = detect_format(data)
    if kind == "zip":
        entries, count, read = _zip_entries(data, limits)
    elif kind in ("tar.gz", "tar"):
        raw = _gunzip(data, limits) if kind == "tar.gz" else data
        entries, count, read = _tar_entries(raw, limits)
    else:
        raise ArchiveRejected("", RULE_UNKNOWN_FORMAT, "expected a .zip, .tar.gz or .tar archive")
    assert kind is not None
    files = [e for e in entries if not e.is_dir]
    if not files:
        raise ArchiveRejected("", RULE_EMPTY, "the archive holds no files")
    prefix = _common_folder([e.path for e in files])
    out: dict[str, PackageFile] = {}
    for entry in files:
        path = entry.path if prefix is None else entry.path[len(prefix) + 1 :]
        out[path] = PackageFile(read(entry), executable=entry.executable)
        if on_entry is not None:
            on_entry(path)
    return ArchiveContents(format=kind, files=out, entries=count, stripped=prefix)


# ---------------------------------------------------------------- names and types


def _display(raw: bytes) -> str:
    return raw.decode("utf-8", errors="backslashreplace")


def _check_name(display: str, name: str) -> str | None:
    """Return the entry's path (no `./` prefix, no trailing `/`), or None for the root."""
    if "\0" in name:
        raise ArchiveRejected(display, RULE_NUL, "a NUL byte in the name")
    if any("\udc80" <= char <= "\udcff" for char in name):
        raise ArchiveRejected(display, RULE_NOT_UTF8, "the name is not valid UTF-8")
    segments = name.replace("\\", "/").split("/")
    if ".." in segments:
        raise ArchiveRejected(display, RULE_ESCAPING, "a '..' segment leaves the package")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":" and name[0].isalpha()):
        raise ArchiveRejected(display, RULE_ABSOLUTE, "entries are relative to the package")
    if "\\" in name:
        raise ArchiveRejected(display, RULE_BACKSLASH, "'\\' is not a separator in an archive")
    path = name.rstrip("/")
    while path.startswith("./"):
        path = path[2:]
    if path in ("", "."):
        return None
    return path


def _kind_rule(mode: int) -> str | None:
    """The rule a non-regular, non-directory file type breaks, from a stat mode."""
    if stat.S_ISLNK(mode):
        return RULE_SYMLINK
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return RULE_DEVICE
    if stat.S_ISFIFO(mode):
        return RULE_FIFO
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return RULE_SPECIAL


def _check_set(entries: list[_Entry], limits: ArchiveLimits) -> None:
    """Duplicates and the declared total, across all entries (before any data is read)."""
    seen: set[str] = set()
    total = 0
    for entry in entries:
        if entry.path in seen:
            raise ArchiveRejected(entry.display, RULE_DUPLICATE, "the name appears twice")
        seen.add(entry.path)
        total += entry.size
        if total > limits.max_bytes:
            raise ArchiveRejected(
                entry.display,
                RULE_EXPANDED_SIZE,
                f"the files declare more than {limits.max_bytes} bytes",
            )


def _common_folder(paths: list[str]) -> str | None:
    firsts = {path.split("/", 1)[0] for path in paths}
    if len(firsts) == 1 and all("/" in path for path in paths):
        return firsts.pop()
    return None


def _ratio_exceeded(expanded: int, compressed: int, limits: ArchiveLimits) -> bool:
    return expanded > RATIO_FLOOR and expanded > limits.max_ratio * max(compressed, 1)


# ---------------------------------------------------------------- zip


def _zip_end_record(data: bytes) -> tuple[int, int, int] | None:
    """Where the central directory ends, its declared entry count and size, or None.

    Found exactly as `zipfile` finds them (CPython's `_EndRecData` and `_EndRecData64`):
    an end record at the very end (no comment) first, else the last signature in the last
    64 KiB; a zip64 end record immediately before its locator replaces its figures. The
    directory ends where the end record (or the zip64 one) begins, which is where `zipfile`
    reads it from (`start_dir`), whatever offset the record states.
    """
    size = _EOCD.size
    if len(data) >= size and data[-size:].startswith(_EOCD_SIG) and data.endswith(b"\0\0"):
        at = len(data) - size
    else:
        at = data.rfind(_EOCD_SIG, max(0, len(data) - size - _MAX_COMMENT))
        if at < 0 or at + size > len(data):
            return None
    _sig, _disk, _start, _here, entries, directory, _offset, _comment = _EOCD.unpack_from(data, at)
    locator = at - _ZIP64_LOCATOR.size
    record = locator - _ZIP64_EOCD.size
    if record >= 0 and _ZIP64_LOCATOR.unpack_from(data, locator)[0] == _ZIP64_LOCATOR_SIG:
        fields = _ZIP64_EOCD.unpack_from(data, record)
        if fields[0] == _ZIP64_EOCD_SIG:
            return record, int(fields[7]), int(fields[8])
    return at, int(entries), int(directory)


def _check_zip_directory(data: bytes, limits: ArchiveLimits) -> None:
    """Bound the central directory before `zipfile` parses it (see the module docstring)."""
    found = _zip_end_record(data)
    if found is None:
        return  # no end record: `zipfile` refuses the archive without reading a directory
    end, declared, size = found
    if declared > limits.max_entries:
        raise ArchiveRejected(
            "", RULE_TOO_MANY_ENTRIES, f"{declared} entries, at most {limits.max_entries}"
        )
    start = end - size
    if start < 0 or size < _CENTRAL.size * declared:
        raise ArchiveRejected(
            "", RULE_CORRUPT, f"a central directory of {size} bytes cannot hold {declared} entries"
        )
    position, count = start, 0
    while position < end:
        if count == limits.max_entries:
            raise ArchiveRejected(
                "",
                RULE_TOO_MANY_ENTRIES,
                f"the central directory holds more than {limits.max_entries} entries "
                f"(its end record declares {declared})",
            )
        if position + _CENTRAL.size > end:
            raise ArchiveRejected("", RULE_CORRUPT, "the central directory is cut short")
        header = _CENTRAL.unpack_from(data, position)
        if header[0] != _CENTRAL_SIG:
            raise ArchiveRejected("", RULE_CORRUPT, "bad magic number in the central directory")
        position += _CENTRAL.size + header[12] + header[13] + header[14]  # name, extra, comment
        count += 1
    if count != declared:
        raise ArchiveRejected(
            "",
            RULE_CORRUPT,
            f"the central directory holds {count} entries, its end record declares {declared}",
        )


def _zip_name(info: zipfile.ZipInfo) -> tuple[str, str]:
    """(display name, name) with the raw bytes decoded as UTF-8, or refused."""
    raw = _zip_raw_name(info)
    display = _display(raw)
    if b"\0" in raw:
        raise ArchiveRejected(display, RULE_NUL, "a NUL byte in the name")
    try:
        return display, raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ArchiveRejected(display, RULE_NOT_UTF8, "the name is not valid UTF-8") from None


def _zip_raw_name(info: zipfile.ZipInfo) -> bytes:
    # zipfile decodes names without the UTF-8 flag as cp437, which maps every byte, so
    # encoding back recovers the bytes exactly. Many tools write UTF-8 without the flag;
    # anything that is not valid UTF-8 either way is refused.
    encoding = "utf-8" if info.flag_bits & _ZIP_UTF8_FLAG else "cp437"
    return info.orig_filename.encode(encoding)


def _zip_entry(info: zipfile.ZipInfo, limits: ArchiveLimits) -> _Entry | None:
    display, name = _zip_name(info)
    path = _check_name(display, name)
    mode = info.external_attr >> 16
    rule = _kind_rule(mode) if stat.S_IFMT(mode) else None
    if rule is not None:
        raise ArchiveRejected(display, rule, f"file type {stat.filemode(mode)[0]!r}")
    if info.flag_bits & _ZIP_ENCRYPTED_FLAG:
        raise ArchiveRejected(display, RULE_ENCRYPTED, "encrypted entries are not read")
    if info.compress_type not in _ZIP_METHODS:
        raise ArchiveRejected(
            display, RULE_COMPRESSION_METHOD, f"method {info.compress_type}; use stored or deflate"
        )
    is_dir = name.endswith("/") or stat.S_ISDIR(mode)
    if is_dir and info.file_size:
        raise ArchiveRejected(display, RULE_CORRUPT, "a directory entry with data")
    if info.file_size > limits.max_bytes:
        raise ArchiveRejected(
            display, RULE_EXPANDED_SIZE, f"declares {info.file_size} bytes, over the bound"
        )
    if _ratio_exceeded(info.file_size, info.compress_size, limits):
        raise ArchiveRejected(
            display,
            RULE_COMPRESSION_RATIO,
            f"{info.file_size} bytes from {info.compress_size}, over {limits.max_ratio:g}:1",
        )
    if path is None:
        return None
    executable = bool(mode & stat.S_IXUSR) and not is_dir
    return _Entry(display, path, is_dir, info.file_size, executable, info)


def _zip_entries(
    data: bytes, limits: ArchiveLimits
) -> tuple[list[_Entry], int, Callable[[_Entry], bytes]]:
    _check_zip_directory(data, limits)
    try:
        infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except UnicodeDecodeError:
        raise ArchiveRejected("", RULE_NOT_UTF8, "a name flagged UTF-8 is not") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise ArchiveRejected("", RULE_CORRUPT, str(exc)) from None
    if len(infos) > limits.max_entries:
        raise ArchiveRejected(
            "", RULE_TOO_MANY_ENTRIES, f"{len(infos)} entries, at most {limits.max_entries}"
        )
    entries = [e for e in (_zip_entry(i, limits) for i in infos) if e is not None]
    _check_set(entries, limits)
    expanded = sum(e.size for e in entries)
    if _ratio_exceeded(expanded, len(data), limits):
        raise ArchiveRejected(
            "", RULE_COMPRESSION_RATIO, f"{expanded} bytes from {len(data)}, over the bound"
        )

    def read(entry: _Entry) -> bytes:
        assert isinstance(entry.member, zipfile.ZipInfo)
        return _zip_member(data, entry.member, entry.display)

    return entries, len(infos), read


def _zip_member(data: bytes, info: zipfile.ZipInfo, display: str) -> bytes:
    """Inflate one member from its local header, never past its declared size + 1 byte."""
    offset = info.header_offset
    if offset + _LOCAL_HEADER.size > len(data):
        raise ArchiveRejected(display, RULE_CORRUPT, "the local header is past the end")
    sig, _ver, flags, method, _t, _d, _crc, _cs, _us, name_len, extra_len = (
        _LOCAL_HEADER.unpack_from(data, offset)
    )
    name_at = offset + _LOCAL_HEADER.size
    if sig != _LOCAL_SIG:
        raise ArchiveRejected(display, RULE_CORRUPT, "no local header where the directory says")
    # A name or method that differs between the directory and the local header is the
    # trick that makes two tools see two different archives.
    if data[name_at : name_at + name_len] != _zip_raw_name(info) or method != info.compress_type:
        raise ArchiveRejected(display, RULE_HEADER_MISMATCH, "local header and directory differ")
    if flags & _ZIP_ENCRYPTED_FLAG:
        raise ArchiveRejected(display, RULE_ENCRYPTED, "encrypted entries are not read")
    start = name_at + name_len + extra_len
    compressed = data[start : start + info.compress_size]
    if len(compressed) != info.compress_size:
        raise ArchiveRejected(display, RULE_CORRUPT, "the entry's data is cut short")
    if method == zipfile.ZIP_STORED:
        out = compressed
    else:
        out = _inflate(compressed, info.file_size, display)
    if len(out) > info.file_size:
        raise ArchiveRejected(
            display, RULE_LARGER_THAN_DECLARED, f"more than the {info.file_size} bytes declared"
        )
    if len(out) < info.file_size:
        raise ArchiveRejected(
            display, RULE_SIZE_MISMATCH, f"{len(out)} bytes, {info.file_size} declared"
        )
    if zlib.crc32(out) != info.CRC:
        raise ArchiveRejected(display, RULE_CRC, "the data does not match its CRC-32")
    return out


def _inflate(compressed: bytes, declared: int, display: str) -> bytes:
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    try:
        out = inflater.decompress(compressed, declared + 1)
        if len(out) == declared and not inflater.eof:
            # Exactly the declared size so far: one more byte proves the entry is larger.
            out += inflater.decompress(inflater.unconsumed_tail, 1)
    except zlib.error as exc:
        raise ArchiveRejected(display, RULE_CORRUPT, f"deflate: {exc}") from None
    if len(out) <= declared and not inflater.eof:
        raise ArchiveRejected(display, RULE_CORRUPT, "the deflate stream is cut short")
    return out


# ---------------------------------------------------------------- tar


def _gunzip(data: bytes, limits: ArchiveLimits) -> bytes:
    """Inflate a gzip stream, never past the size bound or the ratio bound."""
    by_size = limits.max_bytes + (limits.max_entries + 2) * _TAR_OVERHEAD_PER_ENTRY + _TAR_TAIL
    by_ratio = max(RATIO_FLOOR, int(limits.max_ratio * len(data)))
    cap = min(by_size, by_ratio)
    out = bytearray()
    pending = data
    try:
        while pending:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            chunk = pending
            while True:
                out += inflater.decompress(chunk, cap + 1 - len(out))
                if len(out) > cap:
                    rule = RULE_COMPRESSION_RATIO if by_ratio <= by_size else RULE_EXPANDED_SIZE
                    raise ArchiveRejected("", rule, f"the stream expands past {cap} bytes")
                if inflater.eof:
                    break
                if not inflater.unconsumed_tail:
                    raise ArchiveRejected("", RULE_CORRUPT, "the gzip stream is cut short")
                chunk = inflater.unconsumed_tail
            # gzip allows several members back to back; zero padding after the last is
            # common (tape blocking) and ignored.
            pending = inflater.unused_data
            if not pending.strip(b"\0"):
                break
    except zlib.error as exc:
        raise ArchiveRejected("", RULE_CORRUPT, f"gzip: {exc}") from None
    return bytes(out)


def _tar_members(tar: tarfile.TarFile, limits: ArchiveLimits) -> Iterator[tarfile.TarInfo]:
    count = 0
    while True:
        member = tar.next()
        if member is None:
            return
        count += 1
        if count > limits.max_entries:
            raise ArchiveRejected(
                "", RULE_TOO_MANY_ENTRIES, f"more than {limits.max_entries} entries"
            )
        yield member


def _tar_entry(member: tarfile.TarInfo, limits: ArchiveLimits) -> _Entry | None:
    display = member.name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    path = _check_name(display, member.name)
    rule: str | None = None
    if member.issym():
        rule = RULE_SYMLINK
    elif member.islnk():
        rule = RULE_HARD_LINK
    elif member.ischr() or member.isblk():
        rule = RULE_DEVICE
    elif member.isfifo():
        rule = RULE_FIFO
    elif member.issparse() or not (member.isreg() or member.isdir()):
        rule = RULE_SPECIAL
    if rule is not None:
        raise ArchiveRejected(display, rule, f"tar type {member.type!r}")
    if member.size > limits.max_bytes:
        raise ArchiveRejected(
            display, RULE_EXPANDED_SIZE, f"declares {member.size} bytes, over the bound"
        )
    if path is None:
        return None
    is_dir = member.isdir()
    executable = bool(member.mode & stat.S_IXUSR) and not is_dir
    return _Entry(display, path, is_dir, 0 if is_dir else member.size, executable, member)


def _tar_entries(
    raw: bytes, limits: ArchiveLimits
) -> tuple[list[_Entry], int, Callable[[_Entry], bytes]]:
    try:
        # Headers only: `next()` reads each header and skips over the member's data.
        with tarfile.open(
            fileobj=io.BytesIO(raw), mode="r:", encoding="utf-8", errors="surrogateescape"
        ) as tar:
            members = list(_tar_members(tar, limits))
    except (tarfile.TarError, EOFError, ValueError) as exc:
        raise ArchiveRejected("", RULE_CORRUPT, f"tar: {exc}") from None
    entries = [e for e in (_tar_entry(m, limits) for m in members) if e is not None]
    _check_set(entries, limits)

    def read(entry: _Entry) -> bytes:
        # The stream is in memory and only regular members get here (sparse ones are
        # refused), so a member's data is the slice its header points at.
        assert isinstance(entry.member, tarfile.TarInfo)
        start = entry.member.offset_data
        data = raw[start : start + entry.size]
        if len(data) != entry.size:
            raise ArchiveRejected(
                entry.display, RULE_SIZE_MISMATCH, f"{len(data)} bytes, {entry.size} declared"
            )
        return data

    return entries, len(members), read
