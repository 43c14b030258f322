"""Value types of the public face: scopes, origins, package files, write results.

Pure: no I/O, no database, no blob store.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Final, final

from registry.domain.arguments import (
    RULE_RANGE,
    RULE_TYPE,
    check_flag,
    type_name,
)
from registry.domain.numbers import MAX_VERSION, check_int
from registry.errors import ArgumentInvalid, InvalidName

DEFAULT_AGENT: Final = "personal"

MAX_SLUG_CHARS: Final = 64
_SCOPE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_slug(slug: str) -> str:
    """Return `slug` if it follows the Agent Skills `name` rules, else raise `InvalidName`.

    The specification's rules, as its reference validator (`skills-ref`) applies them:
    1-64 characters, each a Unicode letter or digit (`str.isalnum`) or `-`; lower case; no
    leading or trailing hyphen, no `--`. `café-notes` is a slug. One rule is stricter than
    the validator, which NFKC-normalises a name before it checks it: a slug must already
    be NFKC-normalised (`cafe\u0301-notes` is refused; `café-notes` is its form), because a
    slug is an identity (a key in the database, a directory on disk) and two spellings of
    one name must not make two skills. A `SKILL.md` `name` is compared after NFKC.
    """
    normal = unicodedata.normalize("NFKC", slug)
    if normal != slug:
        raise InvalidName("slug", slug, "not NFKC-normalised")
    if not 1 <= len(slug) <= MAX_SLUG_CHARS:
        raise InvalidName("slug", slug, f"1-{MAX_SLUG_CHARS} characters")
    if slug != slug.lower():
        raise InvalidName("slug", slug, "lower case only")
    if not all(c.isalnum() or c == "-" for c in slug):
        raise InvalidName("slug", slug, "only letters, digits and '-'")
    if slug.startswith("-") or slug.endswith("-"):
        raise InvalidName("slug", slug, "no leading/trailing '-'")
    if "--" in slug:
        raise InvalidName("slug", slug, "no consecutive hyphens ('--')")
    return slug


def check_workspace(workspace: str) -> str:
    """Return `workspace` if it is a valid workspace name, else raise `InvalidName`.

    A workspace is named as a skill is (`check_slug`: lower case letters, digits and
    single hyphens, at most 64 characters), so `ACME` and `acme` cannot become two
    workspaces; the refusal names the rule broken, as kind `workspace`.
    """
    try:
        return check_slug(workspace)
    except InvalidName as exc:
        raise InvalidName("workspace", workspace, exc.rule) from None


def check_scope_name(kind: str, value: str) -> str:
    """Return `value` if it is a valid agent name, else raise `InvalidName`."""
    if not _SCOPE_NAME.fullmatch(value):
        raise InvalidName(kind, value, "1-128 characters of [A-Za-z0-9._-], starting alphanumeric")
    return value


@dataclass(frozen=True, slots=True)
class Scope:
    """A tenant's workspace and, inside it, the agent that owns the skill."""

    workspace: str
    agent: str = DEFAULT_AGENT

    def __post_init__(self) -> None:
        check_workspace(self.workspace)
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
    REVOCATION = "revocation"  # the head moved off a revoked version (docs/revocation.md)


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
"""`None`: the skill must not exist yet; `int`: the head must be this version; `ANY`: no check.

0 is a head no skill has (versions start at 1): a write expecting it succeeds only as the
no-op re-save of the head's own package (the HTTP layer's "already applied" retry)."""


def check_expected_head(value: object) -> ExpectedHead:
    """`value` if it is an `ExpectedHead`, else `ArgumentInvalid` (before any work).

    A bool is refused although Python counts it an int (`True` would expect version 1),
    and so is a number no version column holds (below 0, above `MAX_VERSION`).
    """
    if value is None or isinstance(value, AnyHead):
        return value
    if not isinstance(value, int) or isinstance(value, bool):
        detail = f"None, ANY or a version number, not {type_name(value)}"
        raise ArgumentInvalid("expected_head", RULE_TYPE, detail)
    if not 0 <= value <= MAX_VERSION:
        # Not the number itself: `str()` refuses an int of more than 4,300 digits.
        where = "negative" if value < 0 else f"above {MAX_VERSION}"
        raise ArgumentInvalid("expected_head", RULE_RANGE, f"a version number, not {where}")
    return value


@dataclass(frozen=True, slots=True)
class ArchivedVersion:
    """A version of a deleted (archived) skill, as a read, a diff or a restore names it.

    A deleted skill keeps its id, its versions and their numbers (docs/history.md,
    "Deleted skills"). `skill_id` names the deleted skill (history lists it with each
    archived version; the command line writes `SLUG~ID`); None names the slug's only
    deleted skill, and several are `ArchivedSkillAmbiguous`, listing them. Both are ints
    (`ArgumentInvalid` otherwise); one no row can have is simply not found.
    """

    number: int
    skill_id: int | None = None

    def __post_init__(self) -> None:
        check_int("number", self.number)
        if self.skill_id is not None:
            check_int("skill_id", self.skill_id)

    def __str__(self) -> str:
        which = "" if self.skill_id is None else str(self.skill_id)
        return f"~{which}@{self.number}"


@dataclass(frozen=True, slots=True)
class PackageFile:
    """One file of a package: its bytes and whether it is executable.

    `data` may be given as any bytes-like object; it is kept as immutable `bytes` (a
    `bytearray` or a `memoryview` is copied, so its owner may change it afterwards; a
    `bytes` is kept as it is). Anything else, and an `executable` that is not a bool,
    raises `ArgumentInvalid`.
    """

    data: bytes
    executable: bool = False

    def __post_init__(self) -> None:
        if type(self.data) is not bytes:
            object.__setattr__(self, "data", _as_bytes("PackageFile.data", self.data))
        check_flag("PackageFile.executable", self.executable)


FileInput = bytes | PackageFile
"""What `write_package` accepts per path: raw bytes (not executable) or a `PackageFile`."""


def as_package_file(value: object, *, argument: str = "file") -> PackageFile:
    """Normalise a file input to a `PackageFile` (`ArgumentInvalid` naming `argument`).

    Typed `object`: callers outside the type checker's reach (JSON, plugins) pass anything.
    """
    if isinstance(value, PackageFile):
        return value
    return PackageFile(_as_bytes(argument, value))


def _as_bytes(argument: str, value: object) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)  # a `bytes` comes back as itself, not copied
    raise ArgumentInvalid(argument, RULE_TYPE, f"bytes, not {type_name(value)}")


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
    is the head the skill still has (0 for a deleted skill) and `manifest_hash` is the
    proposed package's; `proposal_kind` says why (`learning`, `suppressed`, `update`,
    `draft`). `pending` is set when a learning write waits for a saved slot: no version
    exists yet, `version` is the skill's head (0 for a new skill).
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
    proposal_kind: str | None = None
    pending: int | None = None
