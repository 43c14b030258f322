"""Translating driver errors where they cross the persistence seam.

Services ask `is_transient(exc)` to decide whether a step may be retried, and raise
`translate(exc)` so that callers only ever see the registry's own exceptions.
"""

from __future__ import annotations

import sqlite3
import sys
from typing import TYPE_CHECKING, Final

import sqlalchemy as sa

from registry.errors import RegistryError, StorageUnavailable, WorkspaceBusy

if TYPE_CHECKING:
    import psycopg

# SQLSTATEs after which the whole transaction may be retried: nothing was committed. A lock
# timeout (55P03) is not among them: the write has waited its whole budget for the lock
# (registry/db/budget.py), and waiting again would break the promise of `lock_timeout`.
_TRANSIENT_SQLSTATES: Final = frozenset(
    {
        "40001",  # serialization_failure
        "40P01",  # deadlock_detected
        "57014",  # query_canceled (statement_timeout)
        "57P01",  # admin_shutdown
        "57P02",  # crash_shutdown
        "57P03",  # cannot_connect_now
    }
)
_LOCK_TIMEOUT: Final = "55P03"

# What `translate` handles: driver errors as SQLAlchemy wraps them, a pool that had no
# connection to give, and the connection failures that can surface unwrapped. Programming
# errors are not caught.
DATABASE_ERRORS: Final = (sa.exc.DBAPIError, sa.exc.TimeoutError, ConnectionError, TimeoutError)


def _psycopg_error(exc: object, kind: str = "Error") -> psycopg.Error | None:
    """`exc` if it is psycopg's error of class `kind`, else None.

    Looked up in `sys.modules`, not imported: an error of psycopg's exists only once a
    PostgreSQL engine has imported psycopg, and a SQLite registry (`skillreg list` on the
    embedded default) should not pay for importing the driver to learn that.
    """
    driver = sys.modules.get("psycopg")
    if driver is not None and isinstance(exc, getattr(driver, kind)):
        return exc  # type: ignore[no-any-return]
    return None


def _sqlstate(exc: BaseException) -> str | None:
    orig = _psycopg_error(getattr(exc, "orig", None))
    if orig is not None and orig.sqlstate:
        return orig.sqlstate
    return None


def _sqlite_busy(exc: BaseException) -> bool:
    orig = getattr(exc, "orig", None)
    if not isinstance(orig, sqlite3.OperationalError):
        return False
    text = str(orig).lower()
    return "database is locked" in text or "database table is locked" in text


def is_lock_timeout(exc: BaseException) -> bool:
    """The workspace (or database write) lock was not granted in time."""
    return _sqlstate(exc) == _LOCK_TIMEOUT or _sqlite_busy(exc)


def is_transient(exc: BaseException) -> bool:
    """True if the failed transaction can be retried as a whole with the same outcome.

    A lock that was not granted in time is not transient here (see `_TRANSIENT_SQLSTATES`).
    """
    if is_lock_timeout(exc):
        return False
    if isinstance(exc, sa.exc.DBAPIError):
        if exc.connection_invalidated:
            return True
        state = _sqlstate(exc)
        if state is not None and (state in _TRANSIENT_SQLSTATES or state.startswith("08")):
            return True
        operational = _psycopg_error(getattr(exc, "orig", None), "OperationalError")
        return operational is not None and state is None
    return isinstance(exc, ConnectionError | TimeoutError)


def translate(
    exc: BaseException, *, workspace: str = "", lock_timeout: float = 0.0, database: str = ""
) -> RegistryError:
    """The registry exception to raise for a database failure.

    `database` (the URL with its password hidden) is named in the message, so an operator
    knows which database did not answer; the driver's text is cut to its first line.
    """
    if isinstance(exc, RegistryError):
        return exc
    if is_lock_timeout(exc):
        return WorkspaceBusy(workspace, lock_timeout)
    if isinstance(exc, sa.exc.TimeoutError):
        detail = "no pooled connection became free in time; retry later"
    else:
        text = str(getattr(exc, "orig", None) or exc).strip()
        detail = text.splitlines()[0] if text else type(exc).__name__
    return StorageUnavailable("database", f"{database}: {detail}" if database else detail)
