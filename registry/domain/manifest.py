r"""The manifest: a package as data, and the hash that names a package state.

A manifest is the sorted list of `(path, digest, size, executable)` rows of a package, root
`SKILL.md` included. Its hash identifies a package state everywhere (a version, the desired
and the materialised state of a target, a marketplace baseline, a lock file), so the
encoding it is computed over is fixed here, versioned, and pinned by a test.

The canonical encoding (version 1), as bytes::

    b"skillreg-manifest-v1\n"
    then, for each entry in order of the UTF-8 bytes of its path:
        utf8(path) + b"\x00"
        + ascii(digest, 64 lower-case hex) + b"\x00"
        + ascii(size, decimal, no sign or leading zeros) + b"\x00"
        + (b"x" if executable else b"-")
        + b"\n"

and the manifest hash is the lower-case hex BLAKE3 of those bytes. A path never contains
NUL, the digest has a fixed length and the size is digits only, so the encoding is
unambiguous: two different manifests never encode to the same bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from blake3 import blake3

from blobstore.digest import compute_digest

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

    from registry.domain.model import PackageFile

MANIFEST_MAGIC: Final = b"skillreg-manifest-v1\n"
"""The first bytes of the canonical encoding; a new encoding gets a new version here."""

_DIGEST: Final = re.compile(r"[0-9a-f]{64}")


def file_digest(data: bytes) -> str:
    """Return the content digest of a file: lower-case hex BLAKE3, as the blob store keys it."""
    return compute_digest(data)


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One file of a package: its normalised path, content digest, size and mode."""

    path: str
    digest: str
    size: int
    executable: bool = False

    def __post_init__(self) -> None:
        # These hold for every entry built from a validated package; checking them here
        # keeps a row read back from storage from producing an ambiguous encoding.
        if not self.path or "\0" in self.path:
            raise ValueError(f"a manifest path must be non-empty and free of NUL: {self.path!r}")
        self.path.encode("utf-8")  # lone surrogates cannot be encoded; raises ValueError
        if not _DIGEST.fullmatch(self.digest):
            raise ValueError(f"not a lower-case hex BLAKE3 digest: {self.digest!r}")
        if self.size < 0:
            raise ValueError(f"a size is a non-negative integer: {self.size!r}")

    def encode(self) -> bytes:
        """Return this entry's line of the canonical encoding (see the module docstring)."""
        mode = b"x" if self.executable else b"-"
        return (
            b"\0".join(
                (self.path.encode("utf-8"), self.digest.encode("ascii"), b"%d" % self.size, mode)
            )
            + b"\n"
        )


@dataclass(frozen=True, slots=True)
class ManifestDiff:
    """What changed from one manifest to another, as sorted lists of paths.

    `changed` holds the paths present in both whose content or executable bit differs.
    """

    added: list[str]
    changed: list[str]
    removed: list[str]
    unchanged: list[str]

    @property
    def is_empty(self) -> bool:
        """True when the two manifests describe the same package."""
        return not (self.added or self.changed or self.removed)


def _path_key(entry: ManifestEntry) -> bytes:
    return entry.path.encode("utf-8")


class Manifest:
    """An immutable package manifest: entries sorted by the UTF-8 bytes of their paths.

    Construct it from entries in any order; duplicate paths raise `ValueError`. The empty
    manifest is a valid value (a package needs at least `SKILL.md`, which the package
    validator enforces, not this type).
    """

    __slots__ = ("_by_path", "_entries", "_hash")

    def __init__(self, entries: Iterable[ManifestEntry] = ()) -> None:
        """Build a manifest; raises `ValueError` if two entries share a path."""
        ordered = tuple(sorted(entries, key=_path_key))
        by_path: dict[str, ManifestEntry] = {}
        for entry in ordered:
            if by_path.setdefault(entry.path, entry) is not entry:
                raise ValueError(f"duplicate manifest path {entry.path!r}")
        self._entries = ordered
        self._by_path = by_path
        self._hash = blake3(self.canonical_bytes()).hexdigest()

    @property
    def entries(self) -> tuple[ManifestEntry, ...]:
        """The entries, in canonical order."""
        return self._entries

    @property
    def hash(self) -> str:
        """The manifest hash: lower-case hex BLAKE3 of `canonical_bytes()`."""
        return self._hash

    @property
    def file_count(self) -> int:
        """The number of files."""
        return len(self._entries)

    @property
    def total_size(self) -> int:
        """The sum of the file sizes, in bytes."""
        return sum(entry.size for entry in self._entries)

    @property
    def paths(self) -> list[str]:
        """The paths, in canonical order."""
        return [entry.path for entry in self._entries]

    def canonical_bytes(self) -> bytes:
        """Return the canonical encoding the hash is computed over (see the module docstring)."""
        return MANIFEST_MAGIC + b"".join(entry.encode() for entry in self._entries)

    def get(self, path: str) -> ManifestEntry | None:
        """Return the entry for `path`, or None."""
        return self._by_path.get(path)

    def __getitem__(self, path: str) -> ManifestEntry:
        """Return the entry for `path`; raise `KeyError` if there is none."""
        return self._by_path[path]

    def __contains__(self, path: object) -> bool:
        return path in self._by_path

    def __iter__(self) -> Iterator[ManifestEntry]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Manifest):
            return NotImplemented
        return self._entries == other._entries

    def __hash__(self) -> int:
        return hash(self._hash)

    def __repr__(self) -> str:
        return f"Manifest(files={len(self._entries)}, hash={self._hash[:16]}…)"

    def diff(self, other: Manifest) -> ManifestDiff:
        """Compare this (older) manifest with `other` (newer).

        `added`: paths only in `other`; `removed`: paths only in `self`; `changed`: paths
        in both whose digest, size or executable bit differ (a mode-only change counts);
        `unchanged`: the rest. Each list is in canonical order.
        """
        added: list[str] = []
        changed: list[str] = []
        unchanged: list[str] = []
        for entry in other:
            mine = self._by_path.get(entry.path)
            if mine is None:
                added.append(entry.path)
            elif mine == entry:
                unchanged.append(entry.path)
            else:
                changed.append(entry.path)
        removed = [entry.path for entry in self if entry.path not in other]
        return ManifestDiff(added=added, changed=changed, removed=removed, unchanged=unchanged)


def build_manifest(files: Mapping[str, PackageFile]) -> Manifest:
    """Return the manifest of a package whose paths are normalised, hashing every file."""
    return Manifest(
        ManifestEntry(path, file_digest(file.data), len(file.data), file.executable)
        for path, file in files.items()
    )
