"""A package's files as a tree to show, each folder followed by what it holds."""

from __future__ import annotations

from dataclasses import dataclass

from registry.domain.manifest import Manifest


@dataclass(frozen=True)
class TreeRow:
    """One line of the tree: a folder (`path` None) or a file, `depth` levels deep."""

    depth: int
    name: str
    path: str | None
    size: int | None = None
    executable: bool = False


def file_tree(manifest: Manifest) -> list[TreeRow]:
    """The rows of `manifest`'s tree: `SKILL.md`, the other root files, then each folder."""
    entries = sorted(
        manifest.entries,
        key=lambda e: (e.path != "SKILL.md", e.path.split("/")[:-1], e.path),
    )
    rows: list[TreeRow] = []
    shown: set[tuple[str, ...]] = set()
    for entry in entries:
        parts = entry.path.split("/")
        for depth in range(1, len(parts)):
            folder = tuple(parts[:depth])
            if folder not in shown:
                shown.add(folder)
                rows.append(TreeRow(depth - 1, parts[depth - 1] + "/", None))
        rows.append(TreeRow(len(parts) - 1, parts[-1], entry.path, entry.size, entry.executable))
    return rows
