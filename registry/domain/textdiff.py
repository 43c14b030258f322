"""Unified diffs of package files, with a bounded preview for listings.

A file is text when it has no NUL byte and decodes as UTF-8; anything else is reported as
binary and never diffed line by line. Pure: no I/O.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Final

# What `git` looks at to decide "binary": a NUL in the first few KiB.
_SNIFF_BYTES: Final = 8000
PREVIEW_LINES: Final = 8
"""Lines of a file's unified diff (hunk headers included) shown in a preview."""
CONTEXT_LINES: Final = 3


def is_text(data: bytes) -> bool:
    """True if `data` looks like text: no NUL byte near the start, valid UTF-8."""
    if b"\0" in data[:_SNIFF_BYTES]:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class TextDiff:
    """A file's unified diff: `lines` (headers `---`/`+++` excluded), cut to a limit.

    `total` is the number of lines of the whole diff; `truncated` is True when `lines`
    holds fewer than `total`.
    """

    lines: tuple[str, ...]
    total: int

    @property
    def truncated(self) -> bool:
        return len(self.lines) < self.total

    @property
    def omitted(self) -> int:
        return self.total - len(self.lines)


def unified(
    old: bytes | None,
    new: bytes | None,
    *,
    limit: int | None = PREVIEW_LINES,
    context: int = CONTEXT_LINES,
) -> TextDiff:
    """The unified diff from `old` to `new` (None: the file does not exist on that side).

    Both sides must be text (see `is_text`). With `limit=None` every line is kept.
    """
    before = (old or b"").decode("utf-8").splitlines()
    after = (new or b"").decode("utf-8").splitlines()
    body = list(difflib.unified_diff(before, after, n=context, lineterm=""))[2:]
    kept = body if limit is None else body[:limit]
    return TextDiff(tuple(kept), len(body))
