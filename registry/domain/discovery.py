"""The Agent Skills discovery index (schema 0.2.0): what an entry is, and the document.

A scope's index lists its published skills, one entry each: `name` (the slug),
`description` (from `SKILL.md`), `type` and `url` of the one artifact a client downloads,
and `digest`, the SHA-256 of exactly the artifact's bytes (`sha256:<hex>`). A skill whose
package is its `SKILL.md` alone is a `skill-md` entry (the artifact is that file); any
other is an `archive` entry (the artifact is the reproducible zip of
`registry/domain/ziparchive.py`). Pure: the services decide which skills are listed and
the HTTP layer which URL names each artifact.

Clients refuse names outside the specification's ASCII rule and archives past their
bounds; an entry that would be refused is left out of the index (`unlistable`).

Versioned discovery (agentskills PR #380): each entry carries its skill's `version`, and
each recorded state of an index is a snapshot served at `v{version}/index.json` and
listed by `versions.json`; both are semver strings, version N written `N.0.0` (as the
ClawHub-compatible API writes them). The older layout (`/.well-known/skills/index.json`,
schema 0.1.0) lists each skill's files instead of one artifact (`legacy_document`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from registry.domain import ziparchive
from registry.domain.frontmatter import parse_skill_md
from registry.domain.model import PackageFile
from registry.errors import FrontmatterInvalid, InvalidName

SCHEMA: Final = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
SKILL_MD: Final = "SKILL.md"

ArtifactType = Literal["skill-md", "archive"]
SKILL_MD_TYPE: Final[ArtifactType] = "skill-md"
ARCHIVE_TYPE: Final[ArtifactType] = "archive"
# The artifact formats digests are cached under: the file itself, or the zip layout.
FORMATS: Final[dict[ArtifactType, str]] = {
    SKILL_MD_TYPE: "skill-md",
    ARCHIVE_TYPE: ziparchive.FORMAT,
}

# The bounds the `skills` client (and the spec's safety guidance) put on an archive: at
# most 1000 files and 50 MiB unpacked. The registry's default limits are far below them.
MAX_ARCHIVE_FILES: Final = 1000
MAX_ARCHIVE_BYTES: Final = 50 * 1024 * 1024
MAX_DESCRIPTION: Final = 1024

# The specification's `name`: 1-64 characters of [a-z0-9-], no leading, trailing or double
# hyphen. Clients check it as ASCII, so a slug outside it cannot be listed.
_NAME: Final = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")


def artifact_type(file_count: int) -> ArtifactType:
    """`skill-md` for a package of one file (its root `SKILL.md`), else `archive`."""
    return SKILL_MD_TYPE if file_count == 1 else ARCHIVE_TYPE


def artifact_bytes(kind: ArtifactType, files: Mapping[str, PackageFile]) -> bytes:
    """The bytes a client downloads for a package: its `SKILL.md`, or its zip."""
    if kind == SKILL_MD_TYPE:
        return files[SKILL_MD].data
    return ziparchive.zip_package(files)


def description_of(slug: str, skill_md: bytes) -> str:
    """The description in a stored `SKILL.md` ("" if it no longer parses)."""
    try:
        return parse_skill_md(skill_md, slug).description
    except (FrontmatterInvalid, InvalidName):
        return ""


def sha256_hex(data: bytes) -> str:
    """The lower-case hex SHA-256 of `data` (what the index's `digest` names)."""
    return hashlib.sha256(data).hexdigest()


def unlistable(slug: str, file_count: int, total_size: int, description: str) -> str | None:
    """Why a client would refuse the entry, or None if it may be listed."""
    if not _NAME.fullmatch(slug) or "--" in slug:
        return "the slug is not an ASCII Agent Skills name"
    if not description or len(description) > MAX_DESCRIPTION:
        return "the description is empty or over 1024 characters"
    if file_count > MAX_ARCHIVE_FILES:
        return f"more than {MAX_ARCHIVE_FILES} files"
    if total_size > MAX_ARCHIVE_BYTES:
        return f"more than {MAX_ARCHIVE_BYTES} bytes"
    return None


def version_label(number: int) -> str:
    """The semver string of version (or snapshot) `number`: `N.0.0`."""
    return f"{number}.0.0"


_LABEL: Final = re.compile(r"^([1-9][0-9]{0,9})\.0\.0$")


def label_number(label: str) -> int | None:
    """The number a `N.0.0` label names, or None for any other string."""
    found = _LABEL.fullmatch(label)
    return None if found is None else int(found.group(1))


@dataclass(frozen=True, slots=True)
class IndexItem:
    """One entry of the document, as served."""

    name: str
    type: ArtifactType
    description: str
    url: str
    sha256: str
    version: int


def index_document(items: Sequence[IndexItem]) -> bytes:
    """The index as UTF-8 JSON: `$schema`, then `skills` ordered by name.

    The same items always give the same bytes, so the document's own digest can be its
    entity tag.
    """
    skills = [
        {
            "name": item.name,
            "version": version_label(item.version),
            "type": item.type,
            "description": item.description,
            "url": item.url,
            "digest": f"sha256:{item.sha256}",
        }
        for item in sorted(items, key=lambda i: i.name)
    ]
    document = {"$schema": SCHEMA, "skills": skills}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def fingerprint(items: Sequence[tuple[object, ...]]) -> str:
    """The SHA-256 of a canonical encoding of `items` (JSON-serialisable tuples, any order).

    Two states of an index with the same entries have the same fingerprint, whatever
    order they were listed in.
    """
    encoded = sorted(json.dumps(list(item), ensure_ascii=False) for item in items)
    return hashlib.sha256("\n".join(encoded).encode("utf-8")).hexdigest()


def versions_document(latest: int | None, numbers: Sequence[int]) -> bytes:
    """`versions.json`: the newest snapshot and every listed one, oldest first."""
    document = {
        "latest": None if latest is None else version_label(latest),
        "versions": [version_label(n) for n in sorted(numbers)],
    }
    return json.dumps(document, separators=(",", ":")).encode("utf-8")


@dataclass(frozen=True, slots=True)
class LegacyItem:
    """One entry of the older index: a skill and the paths of its files."""

    name: str
    description: str
    files: tuple[str, ...]


def legacy_listable(paths: Sequence[str]) -> bool:
    """Whether a client of the older layout accepts these paths.

    It refuses the whole index if any entry has a path with `..` anywhere (even inside a
    name), a leading slash or backslash, or no `SKILL.md`; the registry's path rules
    allow a name such as `a..b`, so such a skill is left out of the older index.
    """
    return (
        bool(paths)
        and SKILL_MD in paths
        and not any(".." in p or p.startswith(("/", "\\")) or "\0" in p for p in paths)
    )


def legacy_document(items: Sequence[LegacyItem]) -> bytes:
    """The older index (no `$schema`): `skills`, by name, each with its files in order."""
    skills = [
        {"name": item.name, "description": item.description, "files": list(item.files)}
        for item in sorted(items, key=lambda i: i.name)
    ]
    return json.dumps({"skills": skills}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
