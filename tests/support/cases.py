"""Tables of cases run in one test: a failure names the case it happened in."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def naming(case: object) -> Iterator[None]:
    """Name `case` in any failure (an assertion, an unexpected error) raised inside.

    A string is the case's description as written; anything else is named by its `repr`.
    """
    try:
        yield
    except BaseException as error:
        error.add_note(f"case: {case if isinstance(case, str) else repr(case)}")
        raise
