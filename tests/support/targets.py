"""Looking at materialisation targets from the outside, as a loader and as an auditor would."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from registry.api import Registry
from registry.db.tables import Base, Skill
from registry.domain.manifest import Manifest, ManifestEntry, file_digest
from registry.domain.model import Scope

Files = dict[str, tuple[bytes, bool]]


def load_skill(target: Path, slug: str) -> Files | None:
    """Read `<target>/<slug>` the way a careful loader does; None if the skill is absent.

    Link mode: resolve the link once, read every file of the tree it names, then check
    that the tree still has its `SKILL.md` (the reconciler removes a retired tree's
    `SKILL.md` first, so if it is still there, every file read was from a whole tree).
    A tree retired while it was read raises `Retired`. Copy mode: read the folder.
    Never follows a link inside the package (there must be none: a link is returned as
    a file named with a `@link` suffix so that a comparison fails loudly).
    """
    entry = target / slug
    try:
        text = str(entry.readlink())
    except FileNotFoundError:
        return None
    except OSError:
        root = entry  # a real folder (copy mode)
    else:
        root = target / text
    try:
        files = _read_tree(root)
        if not (root / "SKILL.md").exists():
            if root == entry:
                return None  # copy mode mid-update: no SKILL.md, the loader skips the skill
            raise Retired(slug)
    except FileNotFoundError as exc:
        raise Retired(slug) from exc
    return files


class Retired(Exception):
    """The tree a loader resolved was retired while it read it (the loader retries)."""


def _read_tree(root: Path) -> Files:
    files: Files = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        for name in [*filenames, *[d for d in dirnames if (base / d).is_symlink()]]:
            path = base / name
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                files[f"{rel}@link"] = (str(path.readlink()).encode(), False)
            elif stat.S_ISREG(st.st_mode):
                files[rel] = (path.read_bytes(), bool(st.st_mode & stat.S_IXUSR))
            else:
                files[f"{rel}@special"] = (b"", False)
    return files


def manifest_of(files: Files) -> Manifest:
    return Manifest(
        ManifestEntry(path, file_digest(data), len(data), executable)
        for path, (data, executable) in files.items()
    )


def tree_snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under `root` (links not followed) with what a write would change.

    Access times are left out: reading is not writing.
    """
    out: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        for name in [".", *dirnames, *filenames]:
            path = base / name
            st = path.lstat()
            link = str(path.readlink()) if stat.S_ISLNK(st.st_mode) else None
            rel = path.relative_to(root).as_posix()
            out[rel] = (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, link)
    return out


async def set_skill(registry: Registry, scope: Scope, slug: str, **values: Any) -> None:
    """Set columns of a live skill directly (the controls that do it are another feature)."""
    async with registry.engine.begin() as conn:
        result = await conn.execute(
            sa.update(Skill)
            .where(
                Skill.workspace == scope.workspace,
                Skill.agent == scope.agent,
                Skill.slug == slug,
                Skill.state != "deleted",
            )
            .values(**values)
        )
        assert result.rowcount == 1


async def rows(registry: Registry, table: str) -> list[dict[str, Any]]:
    async with registry.engine.connect() as conn:
        result = await conn.execute(sa.select(Base.metadata.tables[table]).order_by(sa.text("1")))
        return [dict(r._mapping) for r in result]
