"""Numbers taken from outside (headers, cursors, command lines): bounded before they are used.

Python's `int()` refuses more than 4,300 digits with a `ValueError`, accepts digits of
other scripts (`int("٣")` is 3, `int("²")` fails although `"²".isdigit()` is true) and,
below that, builds numbers no column can hold. So a number read from text is taken only
when it is ASCII decimal digits, no longer than its bound's own digits, and within the
bound; anything else is "not a number" to the caller, which refuses it as input.

A number a library caller passes (a version, a proposal or job id) is bounded the same
way before it reaches SQL: the drivers refuse one their column cannot hold (SQLite
above 64 bits with an `OverflowError`, PostgreSQL above its `integer` or `bigint` with
an error), which would be a crash or a `StorageUnavailable` where the caller asked for
something that does not exist. `names_row` answers that without a query, so the caller
raises its not-found error; `page_before` bounds a page's exclusive upper cursor. A
value that is not an int (a bool, a str, a float) is `ArgumentInvalid`.
"""

from __future__ import annotations

from typing import Final

from registry.domain.arguments import RULE_TYPE, check_type, type_name
from registry.errors import ArgumentInvalid

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


def check_int(argument: str, value: object) -> int:
    """`value` if it is an int and not a bool (`True` is not number 1), else `ArgumentInvalid`."""
    if isinstance(value, bool):
        raise ArgumentInvalid(argument, RULE_TYPE, f"an int, not {type_name(value)}")
    return check_type(argument, value, int, "an int")


def names_row(argument: str, value: object, maximum: int) -> bool:
    """Whether the int `value` can name a stored row: 1 to `maximum`, its column's bound.

    Rows are numbered from 1, so anything else names nothing: the caller raises its
    not-found error without asking the database.
    """
    return 1 <= check_int(argument, value) <= maximum


def page_before(argument: str, value: object, maximum: int) -> int | None:
    """A page's exclusive upper cursor as a column can compare it (None: no bound).

    Above every row it is no bound at all; below 1 it is 0, before which no row is.
    """
    if value is None:
        return None
    number = check_int(argument, value)
    return None if number > maximum else max(number, 0)
