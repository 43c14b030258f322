"""Three-way merge of package manifests, file by file (marketplace updates of edited copies).

`base` is the listing version the copy was installed (or last updated) from, `ours` the
copy's head (the owner's edits), `theirs` the new listing version. For each path:

- the same on both sides (including both removed): that;
- changed only upstream (`ours` is still `base`): take `theirs` (added, changed, removed);
- changed only by the owner (`theirs` is still `base`): keep `ours`;
- changed on both sides, differently: a conflict. Content and executable bit count as one
  change, so a mode flip on one side against an edit on the other is a conflict too.

The merge of a conflicting path is left to `prefer` (`theirs` by default: the proposal
shows the owner the upstream side, and the owner's head is untouched until they decide).
Paths that merge cleanly one by one may still collide as a set (the owner added `notes.md`,
upstream added `Notes.md`); `check_paths` reports that as a conflict of its own.

Content-check approvals follow the files (`merge_approvals`): a file taken from upstream
keeps the approvals the listing version holds for it, a file kept from the owner keeps the
copy's. Pure: manifests in, a manifest out; no bytes are read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from registry.domain.approvals import Approval
from registry.domain.manifest import Manifest, ManifestEntry
from registry.domain.paths import check_path_set
from registry.errors import PathRejected

BOTH_CHANGED: Final = "both_changed"
CHANGED_AND_REMOVED: Final = "changed_and_removed"
BOTH_ADDED: Final = "both_added"
PATH_COLLISION: Final = "path_collision"

Side = Literal["ours", "theirs"]


@dataclass(frozen=True, slots=True)
class MergeConflict:
    """A path both sides changed differently (`kind` is one of the constants above)."""

    path: str
    kind: str


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The merged manifest and what went into it, each list in canonical path order."""

    manifest: Manifest
    conflicts: tuple[MergeConflict, ...]
    taken: tuple[str, ...]
    """Paths changed only upstream, taken from `theirs`."""
    kept: tuple[str, ...]
    """Paths changed only by the owner, kept from `ours`."""

    @property
    def clean(self) -> bool:
        """True when nothing conflicts: the merge can be published without a decision."""
        return not self.conflicts


def _conflict_kind(
    base: ManifestEntry | None, ours: ManifestEntry | None, theirs: ManifestEntry | None
) -> str:
    if base is None:
        return BOTH_ADDED
    if ours is None or theirs is None:
        return CHANGED_AND_REMOVED
    return BOTH_CHANGED


def merge_manifests(
    base: Manifest, ours: Manifest, theirs: Manifest, *, prefer: Side = "theirs"
) -> MergeResult:
    """Merge `theirs` into `ours` against their common `base` (see the module docstring)."""
    paths = sorted({*base.paths, *ours.paths, *theirs.paths}, key=lambda path: path.encode("utf-8"))
    merged: list[ManifestEntry] = []
    conflicts: list[MergeConflict] = []
    taken: list[str] = []
    kept: list[str] = []
    for path in paths:
        b, o, t = base.get(path), ours.get(path), theirs.get(path)
        if o == t:
            chosen = o
        elif o == b:
            chosen = t
            taken.append(path)
        elif t == b:
            chosen = o
            kept.append(path)
        else:
            conflicts.append(MergeConflict(path, _conflict_kind(b, o, t)))
            chosen = t if prefer == "theirs" else o
        if chosen is not None:
            merged.append(chosen)
    manifest = Manifest(merged)
    collision = check_paths(manifest)
    if collision is not None:
        conflicts.append(collision)
        # The set cannot be materialised; the proposal falls back to the chosen side whole.
        manifest = theirs if prefer == "theirs" else ours
    return MergeResult(manifest, tuple(conflicts), tuple(taken), tuple(kept))


def check_paths(manifest: Manifest) -> MergeConflict | None:
    """A conflict if the manifest's paths cannot coexist in one folder, else None."""
    try:
        check_path_set(manifest.paths)
    except PathRejected as exc:
        return MergeConflict(exc.path, PATH_COLLISION)
    return None


def merge_approvals(
    merged: Manifest,
    ours: Manifest,
    theirs: Manifest,
    mine: Iterable[Approval],
    upstream: Iterable[Approval],
) -> tuple[Approval, ...]:
    """The approvals the merged package inherits: each file's, from the side it came from.

    A file that is the same on both sides may use either side's approvals for it; the
    larger occurrence count wins (never the sum, which would allow a duplicate).
    """
    sides = ((ours, tuple(mine)), (theirs, tuple(upstream)))
    kept: dict[tuple[str, str], Approval] = {}
    for entry in merged:
        for side, approvals in sides:
            if side.get(entry.path) != entry:
                continue
            for approval in approvals:
                if approval.path != entry.path:
                    continue
                key = (approval.path, approval.value_hash)
                current = kept.get(key)
                if current is None or approval.occurrences > current.occurrences:
                    kept[key] = approval
    return tuple(sorted(kept.values()))
