"""What the ClawHub-compatible API (docs/clawhub.md) computes the way the `clawhub` client does.

Three things must agree with the client byte for byte, or it misreads the registry:

- **Versions.** ClawHub names versions with semver strings; the registry numbers them
  1..n and never changes one. Version N is served as `"N.0.0"`, and only that string
  names it (`"2.0.1"` names nothing). A publish names a semver greater than the newest
  (the client bumps the patch by default); it becomes the next number, N+1.
- **The fingerprint** by which `clawhub update` recognises a local copy: the SHA-256 of
  `path:sha256` lines, one per file, sorted with JavaScript's `localeCompare`, joined by
  newlines; files with a path segment that starts with `.` are not part of it (the client
  never reads them from disk).
- **That sort.** `localeCompare` is ICU's root collation, not code point order
  (`scripts/run.py` sorts before `SKILL.md`). `collation_key` reproduces it for ASCII
  paths: punctuation before digits before letters, letters compared without case first,
  lower case before upper on a tie. Other characters sort after the letters by code
  point, which may differ from ICU for non-ASCII names: such a package is still served
  and installed, but `update` may not recognise an unedited copy of it by fingerprint
  alone (the client then falls back to the fingerprint it recorded at install).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Final

from registry.domain.model import PackageFile

_SERVED: Final = re.compile(r"^([1-9][0-9]{0,8})\.0\.0$")
_SEMVER: Final = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)
# ICU root collation's order of the ASCII punctuation and symbols (CLDR), all before digits.
_PUNCTUATION: Final = "\t\n\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"


def semver_of(version: int) -> str:
    """The ClawHub version string of registry version `version`."""
    return f"{version}.0.0"


def version_of(semver: str) -> int | None:
    """The registry version a served string names (`"3.0.0"` -> 3), or None."""
    found = _SERVED.match(semver.strip())
    return None if found is None else int(found.group(1))


def semver_triple(semver: str) -> tuple[int, int, int] | None:
    """`(major, minor, patch)` of a valid release semver; None if invalid or a prerelease."""
    found = _SEMVER.match(semver.strip())
    if found is None or found.group(4) is not None:
        return None
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


def collation_key(text: str) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    """A sort key that orders ASCII strings as JavaScript's `localeCompare` (ICU root)."""
    primary: list[tuple[int, int]] = []
    tertiary: list[int] = []
    for char in text:
        if char in _PUNCTUATION:
            primary.append((0, _PUNCTUATION.index(char)))
            tertiary.append(0)
        elif "0" <= char <= "9":
            primary.append((1, ord(char)))
            tertiary.append(0)
        elif char.isascii() and char.isalpha():
            primary.append((2, ord(char.lower())))
            tertiary.append(1 if char.isupper() else 0)
        else:
            primary.append((3, ord(char)))
            tertiary.append(0)
    return tuple(primary), tuple(tertiary)


def fingerprinted(path: str) -> bool:
    """Whether the client counts `path` in a fingerprint (no segment starts with a dot)."""
    return not any(segment.startswith(".") for segment in path.split("/"))


def fingerprint(sha256_by_path: Mapping[str, str]) -> str:
    """The client's fingerprint of a package, from each counted file's SHA-256 hex."""
    paths = sorted((p for p in sha256_by_path if fingerprinted(p)), key=collation_key)
    payload = "\n".join(f"{path}:{sha256_by_path[path]}" for path in paths)
    return hashlib.sha256(payload.encode()).hexdigest()


def package_fingerprint(files: Mapping[str, PackageFile]) -> str:
    """The client's fingerprint of a package's files."""
    return fingerprint({path: hashlib.sha256(f.data).hexdigest() for path, f in files.items()})


_TYPES: Final = {
    ".md": "text/markdown",
    ".txt": "text/plain",
    ".json": "application/json",
    ".py": "text/x-python",
    ".sh": "application/x-sh",
    ".js": "text/javascript",
    ".ts": "text/plain",
    ".yaml": "text/yaml",
    ".yml": "text/yaml",
    ".html": "text/html",
    ".csv": "text/csv",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".svg": "image/svg+xml",
}


def content_type(path: str) -> str:
    """The content type shown for a file (informational; bytes are served as they are)."""
    dot = path.rfind(".")
    return (
        _TYPES.get(path[dot:].lower(), "application/octet-stream")
        if dot >= 0
        else ("application/octet-stream")
    )
