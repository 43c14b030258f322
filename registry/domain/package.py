"""Validate a whole package before anything is stored (DESIGN.md, "The package write", step 1).

`validate_package` applies every structural rule to a candidate package and returns it with
normalised paths and its parsed `SKILL.md`. It does no I/O and no content scanning: the
service scans the validated files as a separate step (`registry.domain.scanner`), so that it
can skip digests already scanned clean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from registry.domain.arguments import RULE_TYPE, type_name
from registry.domain.frontmatter import RULE_MISSING_SKILL_MD, Frontmatter, parse_skill_md
from registry.domain.model import PackageFile, as_package_file, check_slug
from registry.domain.paths import SKILL_MD, check_path_set, check_stored_path, normalize_paths
from registry.errors import ArgumentInvalid, FrontmatterInvalid, LimitExceeded

if TYPE_CHECKING:
    from registry.domain.limits import Limits
    from registry.domain.manifest import Manifest
    from registry.domain.model import FileInput


@dataclass(frozen=True, slots=True)
class ValidatedPackage:
    """A package that passed validation: files keyed by their stored (NFC) paths."""

    files: dict[str, PackageFile]
    frontmatter: Frontmatter

    @property
    def total_size(self) -> int:
        """The sum of the file sizes, in bytes."""
        return sum(len(file.data) for file in self.files.values())


def validate_package(files: Mapping[str, FileInput], slug: str, limits: Limits) -> ValidatedPackage:
    """Validate a candidate package for the skill `slug`; return it normalised.

    Checks run cheapest first, and the first broken rule raises:

    1. `slug` is a valid slug (`InvalidName`); `files` is a mapping (`ArgumentInvalid`);
    2. at most `limits.max_files` files, as counted, not as `len()` says
       (`LimitExceeded("max_files")`), each path a `str` (`ArgumentInvalid`);
    3. every path passes the path rules, and no two raw paths share a normalised form
       (`PathRejected`, see `registry.domain.paths`);
    4. the paths can coexist: no case-folding collision, no file that is also a directory;
    5. every file is bytes-like or a `PackageFile` (`ArgumentInvalid` naming
       `files[<path>]`) and at most `limits.max_file_bytes`
       (`LimitExceeded("max_file_bytes", path=)`);
    6. the package at most `limits.max_package_bytes` (`LimitExceeded("max_package_bytes")`);
    7. a root `SKILL.md`, exact case (`FrontmatterInvalid("missing_skill_md")`), whose
       frontmatter is valid and names `slug` (`FrontmatterInvalid`).

    Errors name the path as the caller gave it. Within one rule, paths are checked in code
    point order, so the error does not depend on the mapping's order.
    """
    check_slug(slug)
    given = _counted(files, limits)

    raw_of = normalize_paths(given, limits)
    check_path_set(raw_of, raw=raw_of)

    normalised: dict[str, PackageFile] = {}
    for path in sorted(raw_of):
        raw = raw_of[path]
        normalised[path] = as_package_file(given[raw], argument=f"files[{raw!r}]")
    _check_sizes({raw_of[p]: len(f.data) for p, f in normalised.items()}, limits)
    _check_root(normalised, raw_of)
    skill_md = normalised[SKILL_MD]
    return ValidatedPackage(files=normalised, frontmatter=parse_skill_md(skill_md.data, slug))


def check_manifest(slug: str, manifest: Manifest, limits: Limits) -> None:
    """Check a package known only as its manifest (a stored or received one) by the same rules.

    What the disk gets from the registry passes the rules the write path applied when it
    was stored, checked again where it is used (a reconciler, a host syncing from a
    server it cannot vouch for): the slug (`InvalidName`); at most `limits.max_files`
    files (`LimitExceeded`); every path as stored (`check_stored_path`: no traversal,
    absolute path, backslash, NUL or control character, within the depth and segment
    limits, already NFC) and the paths together (`check_path_set`); each size and the
    total within the limits; a root `SKILL.md`. The first broken rule raises, in the order
    of `validate_package`.
    """
    check_slug(slug)
    if len(manifest) > limits.max_files:
        raise LimitExceeded("max_files", limits.max_files, len(manifest))
    paths = manifest.paths
    for path in sorted(paths):
        check_stored_path(path, limits)
    check_path_set(paths)
    _check_sizes({e.path: e.size for e in manifest}, limits)
    _check_root(dict.fromkeys(paths), {p: p for p in paths})


def _check_sizes(sizes: Mapping[str, int], limits: Limits) -> None:
    """Each size within `max_file_bytes` (paths in code point order), the sum within the total."""
    for path in sorted(sizes):
        if sizes[path] > limits.max_file_bytes:
            raise LimitExceeded("max_file_bytes", limits.max_file_bytes, sizes[path], path=path)
    total = sum(sizes.values())
    if total > limits.max_package_bytes:
        raise LimitExceeded("max_package_bytes", limits.max_package_bytes, total)


def _check_root(files: Mapping[str, object], raw_of: Mapping[str, str]) -> None:
    """A root `SKILL.md`, exact case; a near miss is named in the error."""
    if SKILL_MD in files:
        return
    near = [raw_of[p] for p in files if "/" not in p and p.casefold() == "skill.md"]
    hint = f"; found {near[0]!r}, but the name is case-sensitive" if near else ""
    raise FrontmatterInvalid(RULE_MISSING_SKILL_MD, f"the root holds no SKILL.md{hint}")


def _counted(files: object, limits: Limits) -> dict[str, object]:
    """The caller's files as a plain dict, refused if they are more than the limit.

    A mapping's `len()` is its own word (a subclass may say 1 and hold 150), so the limit
    is checked on the copy, which is also what the rest of the validation reads: a mapping
    whose items change while they are read cannot pass one set and store another. A mapping
    that says it is over the limit is refused before it is copied.
    """
    if not isinstance(files, Mapping):
        detail = f"a mapping of path to file, not {type_name(files)}"
        raise ArgumentInvalid("files", RULE_TYPE, detail)
    if len(files) > limits.max_files:
        raise LimitExceeded("max_files", limits.max_files, len(files))
    given = dict(files)
    if len(given) > limits.max_files:
        raise LimitExceeded("max_files", limits.max_files, len(given))
    for path in given:
        if not isinstance(path, str):
            raise ArgumentInvalid("files", RULE_TYPE, f"a path is a str, not {type_name(path)}")
    return given
