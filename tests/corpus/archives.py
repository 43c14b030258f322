"""The hostile archive corpus: archives a marketplace import must refuse, each for one reason.

Every case is built in memory (zipfile/tarfile over bytes, plus byte patches for what those
modules refuse to write: wrong sizes, raw non-UTF-8 names, NUL bytes, mismatched headers)
and names the error it must produce: `ArchiveRejected` with its rule for the archive
reader's refusals, or the write path's error for archives that extract cleanly into a bad
package. The cases assume `CORPUS_ARCHIVE_LIMITS` (small, so bombs stay cheap to build).

Also here: `good_zip`, `good_tar_gz` and friends, valid archives of a small skill.
"""

from __future__ import annotations

import gzip
import io
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from registry.domain.archive import ArchiveLimits
from registry.errors import (
    ArchiveRejected,
    ContentBlocked,
    FrontmatterInvalid,
    PathRejected,
    RegistryError,
)
from tests.corpus import fakes

LISTING = "corpus-listing"
CORPUS_ARCHIVE_LIMITS = ArchiveLimits(max_entries=64, max_bytes=1024 * 1024, max_ratio=50.0)

SKILL_MD = (
    f"---\nname: {LISTING}\ndescription: A listing from the archive corpus.\n---\n\n"
    "# Corpus listing\n\nUse it when a test needs an archive.\n"
).encode()
RUN_PY = b"print('hello from the corpus')\n"
GUIDE_MD = b"# Guide\n\nSome words.\n"
# path -> (data, executable)
GOOD_FILES: dict[str, tuple[bytes, bool]] = {
    "SKILL.md": (SKILL_MD, False),
    "scripts/run.py": (RUN_PY, True),
    "references/guide.md": (GUIDE_MD, False),
}
_EPOCH = (2026, 1, 1, 0, 0, 0)


# ---------------------------------------------------------------- builders


def zip_of(
    entries: list[tuple[str, bytes]] | None = None,
    *,
    prefix: str = "",
    mode: dict[str, int] | None = None,
    method: int = zipfile.ZIP_DEFLATED,
) -> bytes:
    """A zip of `entries` (default: the good files), names under `prefix`."""
    modes = mode or {}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        items = entries if entries is not None else [(p, d) for p, (d, _) in GOOD_FILES.items()]
        for name, data in items:
            info = zipfile.ZipInfo(prefix + name, date_time=_EPOCH)
            info.compress_type = method
            executable = GOOD_FILES.get(name, (b"", False))[1]
            info.external_attr = modes.get(name, stat.S_IFREG | (0o755 if executable else 0o644))
            info.external_attr <<= 16
            archive.writestr(info, data)
    return buffer.getvalue()


def zip_with_directory(entries: int, *, declared: int) -> bytes:
    """A zip whose central directory holds `entries` headers but whose end record says `declared`.

    Every header is the good `SKILL.md` member's (a directory may repeat names); only the
    end record lies. The directory takes about 60 bytes an entry.
    """
    honest = zip_of([("SKILL.md", SKILL_MD)])
    end = honest.rindex(b"PK\x05\x06")
    directory_size, directory_at = struct.unpack_from("<2L", honest, end + 12)
    header = honest[directory_at : directory_at + directory_size]
    directory = header * entries
    record = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, declared, declared, len(directory), directory_at, 0
    )
    return honest[:directory_at] + directory + record


def tar_of(
    members: list[tarfile.TarInfo | tuple[str, bytes]] | None = None,
    *,
    prefix: str = "",
    compress: bool = True,
    encoding: str = "utf-8",
    tar_format: int = tarfile.PAX_FORMAT,
) -> bytes:
    """A tar (gzip'd unless `compress=False`) of `members` (default: the good files)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tar_format, encoding=encoding) as archive:
        items = members
        if items is None:
            items = [(p, d) for p, (d, _) in GOOD_FILES.items()]
        for item in items:
            if isinstance(item, tarfile.TarInfo):
                archive.addfile(item)
                continue
            name, data = item
            info = tarfile.TarInfo(prefix + name)
            info.size = len(data)
            info.mtime = 1767225600
            info.mode = 0o755 if GOOD_FILES.get(name, (b"", False))[1] else 0o644
            archive.addfile(info, io.BytesIO(data))
    raw = buffer.getvalue()
    return gzip.compress(raw, mtime=0) if compress else raw


def tar_member(name: str, kind: bytes, **fields: object) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    for key, value in fields.items():
        setattr(info, key, value)
    return info


def good_zip(prefix: str = "") -> bytes:
    return zip_of(prefix=prefix)


def good_tar_gz(prefix: str = "") -> bytes:
    return tar_of(prefix=prefix)


def _good_plus(name: str, data: bytes) -> list[tuple[str, bytes]]:
    return [*((p, d) for p, (d, _) in GOOD_FILES.items()), (name, data)]


def _patched(data: bytes, old: bytes, new: bytes, count: int = -1) -> bytes:
    assert len(old) == len(new), "patches keep offsets"
    assert old in data
    return data.replace(old, new, count)


def _central_offset(data: bytes, name: bytes) -> int:
    """Where the central directory header of the entry `name` starts."""
    return data.index(name, data.index(b"PK\x01\x02")) - 46


def _set_sizes(
    data: bytes, name: bytes, *, size: int | None = None, crc: int | None = None
) -> bytes:
    """Rewrite an entry's uncompressed size and/or CRC in both headers."""
    out = bytearray(data)
    local = data.index(name) - 30
    central = _central_offset(data, name)
    if size is not None:
        struct.pack_into("<L", out, local + 22, size)
        struct.pack_into("<L", out, central + 24, size)
    if crc is not None:
        struct.pack_into("<L", out, local + 14, crc)
        struct.pack_into("<L", out, central + 16, crc)
    return bytes(out)


def _set_flag(data: bytes, name: bytes, flag: int) -> bytes:
    out = bytearray(data)
    local = data.index(name) - 30
    central = _central_offset(data, name)
    for at, offset in ((local, 6), (central, 8)):
        (flags,) = struct.unpack_from("<H", out, at + offset)
        struct.pack_into("<H", out, at + offset, flags | flag)
    return bytes(out)


# ---------------------------------------------------------------- hostile zips


def _zip_slip() -> bytes:
    return zip_of(_good_plus("../evil.sh", b"rm -rf ~\n"))


def _zip_slip_nested() -> bytes:
    return zip_of(_good_plus("scripts/../../../evil.sh", b"x\n"))


def _zip_slip_backslash() -> bytes:
    return zip_of(_good_plus("..\\..\\evil.sh", b"x\n"))


def _zip_absolute() -> bytes:
    return zip_of(_good_plus("/etc/cron.d/evil", b"x\n"))


def _zip_drive() -> bytes:
    return zip_of(_good_plus("C:/Windows/evil.dll", b"x\n"))


def _zip_typed(name: str, kind: int) -> Callable[[], bytes]:
    def build() -> bytes:
        return zip_of(_good_plus(name, b"/etc/passwd"), mode={name: kind | 0o777})

    return build


def _zip_duplicate() -> bytes:
    data = zip_of(_good_plus("references/guidx.md", b"second\n"))
    # zipfile warns on a duplicate name, so write a twin and rename it in both headers.
    return _patched(data, b"references/guidx.md", b"references/guide.md")


def _zip_duplicate_dot() -> bytes:
    return zip_of(_good_plus("./SKILL.md", SKILL_MD))


def _zip_bomb() -> bytes:
    # 512 KiB of zeros deflate to about 500 bytes: a ratio near 1000:1 (bound 50:1).
    return zip_of(_good_plus("references/zeros.bin", bytes(512 * 1024)))


def _zip_too_large() -> bytes:
    # Stored (ratio 1), but the files declare more than the 1 MiB bound in total.
    blob = bytes(range(256)) * 2400
    return zip_of([*_good_plus("a.bin", blob), ("b.bin", blob)], method=zipfile.ZIP_STORED)


def _zip_huge_entry_count() -> bytes:
    return zip_of([(f"references/n{i:04d}.md", b"") for i in range(5000)])


def _zip_non_utf8() -> bytes:
    return _patched(zip_of(_good_plus("cafX.md", b"x\n")), b"cafX.md", b"caf\xe9.md")


def _zip_utf8_flag_lies() -> bytes:
    data = _patched(zip_of(_good_plus("cafX.md", b"x\n")), b"cafX.md", b"caf\xff.md")
    return _set_flag(data, b"caf\xff.md", 0x800)


def _zip_nul_name() -> bytes:
    return _patched(zip_of(_good_plus("evilX.md", b"x\n")), b"evilX.md", b"evil\x00.md")


def _zip_larger_than_declared() -> bytes:
    data = zip_of(_good_plus("references/big.md", b"0123456789" * 100))
    return _set_sizes(data, b"references/big.md", size=10)


def _zip_smaller_than_declared() -> bytes:
    data = zip_of(_good_plus("references/small.md", b"tiny\n"))
    return _set_sizes(data, b"references/small.md", size=5000)


def _zip_crc() -> bytes:
    data = zip_of(_good_plus("references/crc.md", b"checked\n"))
    return _set_sizes(data, b"references/crc.md", crc=zlib.crc32(b"something else"))


def _zip_header_mismatch() -> bytes:
    data = zip_of(_good_plus("references/one.md", b"x\n"))
    local = data.index(b"references/one.md")
    return data[:local] + b"references/two.md" + data[local + len(b"references/one.md") :]


def _zip_encrypted() -> bytes:
    return _set_flag(zip_of(_good_plus("secret.md", b"x\n")), b"secret.md", 0x1)


def _zip_bzip2() -> bytes:
    return zip_of(method=zipfile.ZIP_BZIP2)


def _zip_truncated() -> bytes:
    return good_zip()[:-30]


def _zip_empty() -> bytes:
    return zip_of([])


# ---------------------------------------------------------------- hostile tars


def _tar_slip() -> bytes:
    return tar_of([*_good_tar(), ("../../evil.sh", b"x\n")])


def _tar_absolute() -> bytes:
    return tar_of([*_good_tar(), ("/usr/local/bin/evil", b"x\n")])


def _good_tar() -> list[tarfile.TarInfo | tuple[str, bytes]]:
    return [(p, d) for p, (d, _) in GOOD_FILES.items()]


def _tar_typed(member: tarfile.TarInfo) -> Callable[[], bytes]:
    def build() -> bytes:
        return tar_of([*_good_tar(), member])

    return build


def _tar_pax_escape() -> bytes:
    member = tarfile.TarInfo("innocent.md")
    member.pax_headers = {"path": "../../escape.md"}
    member.size = 0
    return tar_of([*_good_tar(), member])


def _tar_bomb() -> bytes:
    return tar_of([*_good_tar(), ("references/zeros.bin", bytes(4 * 1024 * 1024))])


def _tar_entry_count() -> bytes:
    return tar_of([(f"references/n{i:03d}.md", b"") for i in range(80)], compress=False)


def _tar_non_utf8() -> bytes:
    return tar_of(
        [*_good_tar(), ("caf\u00e9.md", b"x\n")], encoding="latin-1", tar_format=tarfile.GNU_FORMAT
    )


def _tar_duplicate() -> bytes:
    return tar_of([*_good_tar(), ("SKILL.md", SKILL_MD)])


def _tar_truncated() -> bytes:
    raw = tar_of([*_good_tar(), ("references/long.md", b"y" * 5000)], compress=False)
    return gzip.compress(raw[: raw.index(b"y" * 100) + 1000], mtime=0)


def _gzip_truncated() -> bytes:
    return good_tar_gz()[:-12]


def _not_an_archive() -> bytes:
    return b"#!/bin/sh\necho this is not an archive\n" * 10


# ---------------------------------------------------------------- packages that extract


def _nested_skill_md() -> bytes:
    return zip_of(_good_plus("scripts/SKILL.md", SKILL_MD))


def _missing_skill_md() -> bytes:
    return zip_of([("README.md", b"# no skill here\n")])


def _secret() -> bytes:
    return tar_of([*_good_tar(), ("references/keys.md", f"key = {fakes.GITHUB_TOKEN}\n".encode())])


@dataclass(frozen=True)
class ArchiveCase:
    """One archive the import must refuse, and how (`rule` for `ArchiveRejected`)."""

    id: str
    build: Callable[[], bytes]
    error: type[RegistryError]
    rule: str | None

    def matches(self, exc: BaseException) -> bool:
        if type(exc) is not self.error:
            return False
        if self.rule is None:
            return True
        return getattr(exc, "rule", None) == self.rule


def _reject(case_id: str, build: Callable[[], bytes], rule: str) -> ArchiveCase:
    return ArchiveCase(case_id, build, ArchiveRejected, rule)


CASES: list[ArchiveCase] = [
    _reject("zip-slip", _zip_slip, "escaping_path"),
    _reject("zip-slip-nested", _zip_slip_nested, "escaping_path"),
    _reject("zip-slip-backslash", _zip_slip_backslash, "escaping_path"),
    _reject("zip-absolute-path", _zip_absolute, "absolute_path"),
    _reject("zip-drive-letter", _zip_drive, "absolute_path"),
    _reject("zip-symlink", _zip_typed("link", stat.S_IFLNK), "symlink"),
    _reject("zip-char-device", _zip_typed("tty", stat.S_IFCHR), "device"),
    _reject("zip-block-device", _zip_typed("sda", stat.S_IFBLK), "device"),
    _reject("zip-fifo", _zip_typed("pipe", stat.S_IFIFO), "fifo"),
    _reject("zip-socket", _zip_typed("sock", stat.S_IFSOCK), "special_file"),
    _reject("zip-duplicate-entry", _zip_duplicate, "duplicate_entry"),
    _reject("zip-duplicate-dot-prefix", _zip_duplicate_dot, "duplicate_entry"),
    _reject("zip-bomb", _zip_bomb, "compression_ratio"),
    _reject("zip-expanded-size", _zip_too_large, "expanded_size"),
    _reject("zip-huge-entry-count", _zip_huge_entry_count, "too_many_entries"),
    _reject("zip-non-utf8-name", _zip_non_utf8, "invalid_utf8"),
    _reject("zip-utf8-flag-lies", _zip_utf8_flag_lies, "invalid_utf8"),
    _reject("zip-nul-in-name", _zip_nul_name, "nul_byte"),
    _reject("zip-larger-than-declared", _zip_larger_than_declared, "larger_than_declared"),
    _reject("zip-smaller-than-declared", _zip_smaller_than_declared, "size_mismatch"),
    _reject("zip-crc-mismatch", _zip_crc, "crc_mismatch"),
    _reject("zip-header-mismatch", _zip_header_mismatch, "header_mismatch"),
    _reject("zip-encrypted", _zip_encrypted, "encrypted"),
    _reject("zip-bzip2", _zip_bzip2, "unsupported_compression"),
    _reject("zip-truncated", _zip_truncated, "corrupt"),
    _reject("zip-empty", _zip_empty, "empty_archive"),
    _reject("tar-slip", _tar_slip, "escaping_path"),
    _reject("tar-absolute-path", _tar_absolute, "absolute_path"),
    _reject("tar-pax-path-escape", _tar_pax_escape, "escaping_path"),
    _reject(
        "tar-symlink",
        _tar_typed(tar_member("link", tarfile.SYMTYPE, linkname="/etc/passwd")),
        "symlink",
    ),
    _reject(
        "tar-hard-link",
        _tar_typed(tar_member("hard", tarfile.LNKTYPE, linkname="SKILL.md")),
        "hard_link",
    ),
    _reject("tar-char-device", _tar_typed(tar_member("tty", tarfile.CHRTYPE)), "device"),
    _reject("tar-block-device", _tar_typed(tar_member("sda", tarfile.BLKTYPE)), "device"),
    _reject("tar-fifo", _tar_typed(tar_member("pipe", tarfile.FIFOTYPE)), "fifo"),
    _reject("tar-bomb", _tar_bomb, "compression_ratio"),
    _reject("tar-entry-count", _tar_entry_count, "too_many_entries"),
    _reject("tar-non-utf8-name", _tar_non_utf8, "invalid_utf8"),
    _reject("tar-duplicate-entry", _tar_duplicate, "duplicate_entry"),
    _reject("tar-truncated-member", _tar_truncated, "corrupt"),
    _reject("gzip-truncated", _gzip_truncated, "corrupt"),
    _reject("not-an-archive", _not_an_archive, "unknown_format"),
    ArchiveCase("package-nested-skill-md", _nested_skill_md, PathRejected, "nested_skill_md"),
    ArchiveCase("package-missing-skill-md", _missing_skill_md, FrontmatterInvalid, None),
    ArchiveCase("package-secret", _secret, ContentBlocked, None),
]
"""Every hostile archive; `ArchiveRejected` cases are refused by the reader itself."""

READER_CASES = [case for case in CASES if case.error is ArchiveRejected]
