"""Numbers taken from outside (headers, cursors, command lines): bounded before they are used.

Python's `int()` refuses more than 4,300 digits with a `ValueError`, accepts digits of
other scripts (`int("٣")` is 3, `int("²")` fails although `"²".isdigit()` is true) and,
below that, builds numbers no column can hold. So a number read from text is taken only
when it is ASCII decimal digits, no longer than its bound's own digits, and within the
bound; anything else is "not a number" to the caller, which refuses it as input.
"""

from __future__ import annotations

from typing import Final

MAX_VERSION: Final = 2**31 - 1
"""The largest version number (a 32-bit column)."""

MAX_ID: Final = 2**63 - 1
"""The largest row id (proposals, jobs, events: 64-bit columns)."""


def decimal(text: str, maximum: int) -> int | None:
    """The value of `text` if it is ASCII decimal digits naming at most `maximum`, else None."""
    if not text or len(text) > len(str(maximum)) or not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value <= maximum else None
