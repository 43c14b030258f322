"""What a host admits from a registry's desired state before anything touches its disk.

A desired state comes over the network from a server the host cannot vouch for. It passes
the rules the write path applied when the registry stored each package, with the same
functions (`check_slug`, `check_stored_path`, `check_path_set`, `check_manifest`) and the
host's own package limits:

    the whole state refused (RemoteRefused, nothing changes on the host):
        two entries, or two records, for one slug      duplicate_slug
        a manifest that does not hash to its name      (Inconsistency, integrity_error)
    one entry refused, the rest of the run goes on:
        a slug that breaks the naming rules            reported in `refused`, never
                                                       touched, recorded or removed
        a package that breaks a path rule or a limit   blocked: the skill fails with the
                                                       error, its disk entry stays as it is

So a path like `../../etc/x`, an absolute path or slug, a NUL or a control character, a
file that declares more bytes than a package may hold, never reaches the engine as
something to write, move or remove. The engine checks slugs and manifests again
(`services/materialize/reconcile.py`), for the database source too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from registry.domain.limits import Limits
from registry.domain.manifest import Manifest, ManifestEntry
from registry.domain.model import check_slug
from registry.domain.package import check_manifest
from registry.domain.paths import check_path_set, check_stored_path
from registry.errors import (
    Inconsistency,
    InvalidName,
    LimitExceeded,
    RefusedInput,
    RegistryError,
    RemoteRefused,
)
from registry.services.materialize.exchange import applied_of, head_of
from registry.services.materialize.source import Applied, Head
from registry.wire import DesiredFile, DesiredState

RULE_DUPLICATE_SLUG = "duplicate_slug"
RULE_WRONG_SCOPE = "wrong_scope"


@dataclass(frozen=True)
class Admitted:
    """A desired state as the host takes it: usable heads, blocked slugs, records, refusals."""

    heads: dict[str, Head] = field(default_factory=dict)
    blocked: dict[str, RegistryError] = field(default_factory=dict)
    applied: dict[str, Applied] = field(default_factory=dict)
    refused: tuple[RegistryError, ...] = ()


def admit(state: DesiredState, limits: Limits) -> Admitted:
    """Check a desired state by the registry's own rules (see the module docstring)."""
    refused: list[RegistryError] = []
    heads: dict[str, Head] = {}
    blocked: dict[str, RegistryError] = {}
    for skill in _unique("desired state", state.skills, refused):
        try:
            manifest = None
            if skill.files is not None:
                manifest = received_manifest(skill.slug, skill.files, limits)
        except RefusedInput as exc:
            blocked[skill.slug] = exc
            continue
        try:
            heads[skill.slug] = head_of(skill, manifest)
        except ValueError as exc:
            raise Inconsistency(f"the registry's desired state: {exc}") from None
    applied = {
        a.slug: applied_of(a, a.slug) for a in _unique("applied records", state.applied, refused)
    }
    return Admitted(heads, blocked, applied, tuple(refused))


def received_manifest(slug: str, files: Sequence[DesiredFile], limits: Limits) -> Manifest:
    """The manifest of a package received over the network, checked by the package rules.

    Raises what the write path would have: `InvalidName`, `PathRejected`, `LimitExceeded`,
    `FrontmatterInvalid` (no root `SKILL.md`).
    """
    paths = [f.path for f in files]
    if len(paths) > limits.max_files:  # before anything is done per file
        raise LimitExceeded("max_files", limits.max_files, len(paths))
    for path in paths:
        check_stored_path(path, limits)  # NUL, lone surrogates: refused before they are used
    check_path_set(paths)
    manifest = Manifest(ManifestEntry(f.path, f.digest, f.size, f.executable) for f in files)
    check_manifest(slug, manifest, limits)
    return manifest


class _Slugged(Protocol):
    @property
    def slug(self) -> str: ...


T = TypeVar("T", bound=_Slugged)


def _unique(what: str, items: Iterable[T], refused: list[RegistryError]) -> list[T]:
    """`items` whose slug is valid; invalid slugs go to `refused`; a repeated one ends it all."""
    kept: list[T] = []
    seen: set[str] = set()
    for item in items:
        if item.slug in seen:
            detail = f"slug {item.slug!r} appears twice"
            raise RemoteRefused(f"the registry's {what}", RULE_DUPLICATE_SLUG, detail)
        seen.add(item.slug)
        try:
            check_slug(item.slug)
        except InvalidName as exc:
            refused.append(exc)
            continue
        kept.append(item)
    return kept
