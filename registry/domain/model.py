"""Value types of the public face: scopes, origins, package files, write results.

Pure: no I/O, no database, no blob store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Final, final

from registry.errors import InvalidName

DEFAULT_AGENT: Final = "personal"

_SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
_SCOPE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_slug(slug: str) -> str:
    """Return `slug` if it follows the Agent Skills `name` rules, else raise `InvalidName`.

    1-64 characters of `[a-z0-9-]`, no leading or trailing hyphen, no `--`.
    """
    if not _SLUG.fullmatch(slug):
        raise InvalidName("slug", slug, "1-64 characters of [a-z0-9-], no leading/trailing '-'")
    if "--" in slug:
        raise InvalidName("slug", slug, "no consecutive hyphens ('--')")
    return slug


def check_scope_name(kind: str, value: str) -> str:
    """Return `value` if it is a valid workspace or agent name, else raise `InvalidName`."""
    if not _SCOPE_NAME.fullmatch(value):
        raise InvalidName(kind, value, "1-128 characters of [A-Za-z0-9._-], starting alphanumeric")
    return value


@dataclass(frozen=True, slots=True)
class Scope:
    """A tenant's workspace and, inside it, the agent that owns the skill."""

    workspace: str
    agent: str = DEFAULT_AGENT

    def __post_init__(self) -> None:
        check_scope_name("workspace", self.workspace)
        check_scope_name("agent", self.agent)

    def __str__(self) -> str:
        if self.agent == DEFAULT_AGENT:
            return self.workspace
        return f"{self.workspace}:{self.agent}"


class Origin(StrEnum):
    """Who or what made a version."""

    EDIT = "edit"
    SAVE = "save"
    LEARNING = "learning"
    RESTORE = "restore"
    IMPORT = "import"
    MARKETPLACE_INSTALL = "marketplace_install"
    MARKETPLACE_UPDATE = "marketplace_update"
    OUT_OF_BAND = "out_of_band"


@final
class AnyHead:
    """The type of `ANY`: skip the compare-and-swap check on the head."""

    _instance: AnyHead | None = None

    def __new__(cls) -> AnyHead:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ANY"


ANY: Final = AnyHead()

ExpectedHead = int | None | AnyHead
"""`None`: the skill must not exist yet; `int`: the head must be this version; `ANY`: no check."""


@dataclass(frozen=True, slots=True)
class PackageFile:
    """One file of a package: its bytes and whether it is executable."""

    data: bytes
    executable: bool = False


FileInput = bytes | PackageFile
"""What `write_package` accepts per path: raw bytes (not executable) or a `PackageFile`."""


def as_package_file(value: object) -> PackageFile:
    """Normalise a file input to a `PackageFile` (`TypeError` for anything else).

    Typed `object`: callers outside the type checker's reach (JSON, plugins) pass anything.
    """
    if isinstance(value, PackageFile):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return PackageFile(bytes(value))
    msg = f"a package file must be bytes or PackageFile, not {type(value).__name__}"
    raise TypeError(msg)


@dataclass(frozen=True, slots=True)
class Publication:
    """The result of a package write.

    `created` is True when this call appended `version`; False when the package already was
    the head (an idempotent re-save), in which case `unchanged` is True, nothing was uploaded
    and `version` is the existing head. `retired` is the head this write replaced (None for a
    new skill or a no-op).

    `proposal` is set when the write did not publish but recorded a proposal instead (an
    automated write to a skill under human control, or an owner's draft kept after a lost
    compare-and-swap; docs/history.md): then `created` and `unchanged` are False, `version`
    is the head the skill still has and `manifest_hash` is the proposed package's.
    """

    version: int
    manifest_hash: str
    created: bool
    retired: int | None
    unchanged: bool
    uploaded: int = 0
    uploaded_bytes: int = 0
    committed_at: datetime | None = field(default=None, compare=False)
    proposal: int | None = None
