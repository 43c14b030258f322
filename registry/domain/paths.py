"""Path rules for the files of a skill package (DESIGN.md, "Path rules").

A package path is a relative POSIX path inside the skill folder. It is stored NFC-normalised
and must stay a plain, portable name on every filesystem an agent runtime may materialise it
on (Linux, macOS, Windows). Two layers of rules apply:

- per path, `normalize_path`: the path alone is well formed;
- per package, `check_path_set`: the paths together can be materialised without two of them
  landing on the same file (duplicates, case-folding collisions, a file that is also a
  directory).

Every refusal is a `PathRejected(path, rule, detail)` whose `rule` is one of the `RULE_*`
constants below: they are stable names that callers, tests and documentation rely on.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Final

from registry.errors import PathRejected

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from registry.domain.limits import Limits

RULE_EMPTY: Final = "empty_path"
RULE_INVALID_UNICODE: Final = "invalid_unicode"
RULE_NUL: Final = "nul_byte"
RULE_CONTROL: Final = "control_character"
RULE_BIDI: Final = "bidi_control"
RULE_ABSOLUTE: Final = "absolute_path"
RULE_BACKSLASH: Final = "backslash"
RULE_EMPTY_SEGMENT: Final = "empty_segment"
RULE_DOT_SEGMENT: Final = "dot_segment"
RULE_SEPARATOR_LOOKALIKE: Final = "separator_lookalike"
RULE_TOO_DEEP: Final = "too_deep"
RULE_SEGMENT_TOO_LONG: Final = "segment_too_long"
RULE_NESTED_SKILL_MD: Final = "nested_skill_md"
RULE_DUPLICATE: Final = "duplicate_path"
RULE_CASE_COLLISION: Final = "case_collision"
RULE_FILE_DIR_CONFLICT: Final = "file_dir_conflict"
RULE_NOT_NORMALIZED: Final = "not_normalized"

PATH_RULES: Final = (
    RULE_EMPTY,
    RULE_INVALID_UNICODE,
    RULE_NUL,
    RULE_CONTROL,
    RULE_BIDI,
    RULE_ABSOLUTE,
    RULE_BACKSLASH,
    RULE_EMPTY_SEGMENT,
    RULE_DOT_SEGMENT,
    RULE_SEPARATOR_LOOKALIKE,
    RULE_TOO_DEEP,
    RULE_SEGMENT_TOO_LONG,
    RULE_NESTED_SKILL_MD,
    RULE_DUPLICATE,
    RULE_CASE_COLLISION,
    RULE_FILE_DIR_CONFLICT,
    RULE_NOT_NORMALIZED,
)
"""Every rule name this module can raise."""

SKILL_MD: Final = "SKILL.md"

# C0 controls, DEL and C1 controls are exactly Unicode's general category Cc. The line and
# paragraph separators (Zl, Zp) are added because they break a path across lines in logs,
# listings and line-oriented tools just as "\n" does.
_CONTROL_CATEGORIES: Final = frozenset({"Cc", "Zl", "Zp"})

# Bidirectional formatting characters reorder how a name is displayed, so
# "invoice\u202efdp.sh" reads as "invoicehs.pdf" to a reviewer: the "Trojan Source" trick.
_BIDI_CONTROLS: Final = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def normalize_path(raw: str, limits: Limits) -> str:
    """Return the stored (NFC) form of the package path `raw`, or raise `PathRejected`.

    The checks, cheapest and most fundamental first: not empty; valid Unicode (no lone
    surrogates); no NUL, control or bidirectional formatting characters; not absolute; no
    backslash. Then, on the NFC form: no empty segment (`a//b`, a trailing `/`); no `.` or
    `..` segment, also after NFKC (fullwidth or leader dots) and ignoring the trailing dots
    and spaces Windows strips; no NFKC form of a segment containing a separator; segments
    of at most `limits.max_segment_bytes` UTF-8 bytes; at most `limits.max_depth` segments
    (checked after the segments, so a traversal is reported as one even when it is also
    deep); and no `SKILL.md` below the root (compared case-insensitively).

    The error carries `raw` as given; its message shows it with `repr`, so control and
    formatting characters are escaped.
    """
    if not raw:
        raise PathRejected(raw, RULE_EMPTY, "the path is empty")
    _check_characters(raw)
    if raw.startswith("/"):
        raise PathRejected(raw, RULE_ABSOLUTE, "paths are relative to the skill folder")
    if "\\" in raw:
        raise PathRejected(raw, RULE_BACKSLASH, "use '/' as the separator; '\\' is refused")

    path = unicodedata.normalize("NFC", raw)
    segments = path.split("/")
    if "" in segments:
        raise PathRejected(raw, RULE_EMPTY_SEGMENT, "'//' or a trailing '/' leaves a segment empty")
    for segment in segments:
        _check_segment(raw, segment, limits)
    if len(segments) > limits.max_depth:
        raise PathRejected(
            raw, RULE_TOO_DEEP, f"{len(segments)} segments, at most {limits.max_depth} allowed"
        )
    if len(segments) > 1 and fold(unicodedata.normalize("NFKC", segments[-1])) == fold(SKILL_MD):
        raise PathRejected(raw, RULE_NESTED_SKILL_MD, "only the root may hold SKILL.md")
    return path


def check_stored_path(path: str, limits: Limits) -> str:
    """Return `path` if it is a path as the registry stores it, or raise `PathRejected`.

    For paths that come back from storage or over the network (a manifest): they must pass
    every rule of `normalize_path` and already be in its stored (NFC) form
    (`RULE_NOT_NORMALIZED`), since the registry never stores another.
    """
    if normalize_path(path, limits) != path:
        raise PathRejected(path, RULE_NOT_NORMALIZED, "not in NFC form, as every stored path is")
    return path


def normalize_paths(raws: Iterable[str], limits: Limits) -> dict[str, str]:
    r"""Normalise every path; return a map from the stored form to the raw path as given.

    Raises `PathRejected` for the first invalid path (in code point order of the raw paths,
    so the error does not depend on the caller's ordering) and `RULE_DUPLICATE` when two
    different raw paths have the same NFC form (`"e\\u0301"` and `"\\u00e9"`).
    """
    stored: dict[str, str] = {}
    for raw in sorted(raws):
        path = normalize_path(raw, limits)
        other = stored.setdefault(path, raw)
        if other != raw:
            raise PathRejected(raw, RULE_DUPLICATE, f"same NFC form as {other!r}")
    return stored


def check_path_set(paths: Iterable[str], *, raw: Mapping[str, str] | None = None) -> None:
    """Check that normalised `paths` can coexist in one folder, or raise `PathRejected`.

    Refuses two equal paths (`RULE_DUPLICATE`); a path that is also a directory of another
    (`a` and `a/b`, `RULE_FILE_DIR_CONFLICT`); and two names, files or directories, equal
    under case folding (`Scripts/a` and `scripts/b`, `RULE_CASE_COLLISION`), since they
    would merge on the case-insensitive filesystems of macOS and Windows (which also drops
    trailing dots and spaces, so `notes.` and `notes` collide too).

    `raw` optionally maps a normalised path to the path as the caller gave it, so the error
    names the caller's spelling.
    """
    names = raw or {}
    files: set[str] = set()
    for path in paths:
        if path in files:
            raise PathRejected(names.get(path, path), RULE_DUPLICATE, "the path appears twice")
        files.add(path)

    ordered = sorted(files)
    directories = {prefix: path for path in reversed(ordered) for prefix in _directories(path)}
    for path in ordered:
        if path in directories:
            raise PathRejected(
                names.get(path, path),
                RULE_FILE_DIR_CONFLICT,
                f"is a file and also the directory of {directories[path]!r}",
            )

    seen: dict[str, tuple[str, str]] = {}
    for path in ordered:
        for name in (*_directories(path), path):
            first_name, first_path = seen.setdefault(fold(name), (name, path))
            if first_name != name:
                where = "" if first_name == first_path else f" (from {first_path!r})"
                raise PathRejected(
                    names.get(path, path),
                    RULE_CASE_COLLISION,
                    f"{name!r} and {first_name!r}{where} would be one name on a "
                    "case-insensitive filesystem",
                )


def _check_characters(raw: str) -> None:
    for index, char in enumerate(raw):
        if "\ud800" <= char <= "\udfff":
            raise PathRejected(
                raw, RULE_INVALID_UNICODE, f"lone surrogate U+{ord(char):04X} at index {index}"
            )
        if char == "\0":
            raise PathRejected(raw, RULE_NUL, f"NUL at index {index}")
        if unicodedata.category(char) in _CONTROL_CATEGORIES:
            raise PathRejected(raw, RULE_CONTROL, f"U+{ord(char):04X} at index {index}")
        if char in _BIDI_CONTROLS:
            raise PathRejected(raw, RULE_BIDI, f"U+{ord(char):04X} at index {index}")


def _check_segment(raw: str, segment: str, limits: Limits) -> None:
    compat = unicodedata.normalize("NFKC", segment)
    if "/" in compat or "\\" in compat:
        raise PathRejected(
            raw, RULE_SEPARATOR_LOOKALIKE, f"segment {segment!r} reads as {compat!r} under NFKC"
        )
    # A tool that applies NFKC turns "\uff0e\uff0e" or "\u2025" into "..", and Windows
    # drops trailing dots and spaces from a name, so ". ." or "..." would open "." or "..".
    if not compat.strip(". "):
        if "." in compat:
            reads = "" if compat == segment else f" reads as {compat!r}"
            raise PathRejected(raw, RULE_DOT_SEGMENT, f"segment {segment!r}{reads}")
        raise PathRejected(
            raw, RULE_EMPTY_SEGMENT, f"segment {segment!r} is blank once Windows strips spaces"
        )
    size = len(segment.encode("utf-8"))
    if size > limits.max_segment_bytes:
        raise PathRejected(
            raw,
            RULE_SEGMENT_TOO_LONG,
            f"a segment of {size} UTF-8 bytes, at most {limits.max_segment_bytes} allowed",
        )


def _directories(path: str) -> list[str]:
    """Return the directory prefixes of `path`: `a/b/c` -> `a`, `a/b`."""
    parts = path.split("/")
    return ["/".join(parts[:end]) for end in range(1, len(parts))]


def fold(name: str) -> str:
    """Return the key under which macOS or Windows could take `name` for another name.

    Unicode canonical caseless matching (casefold, then NFC again, since casefold can
    denormalise: it maps "\u0130" to "i\u0307"), with each segment's trailing dots and
    spaces removed, as Windows removes them. It errs towards "equal": `STRASSE` and
    `stra\u00dfe` fold alike though no filesystem merges them.
    """
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())
    return "/".join(segment.rstrip(". ") for segment in folded.split("/"))
