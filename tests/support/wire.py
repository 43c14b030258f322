"""What PostgreSQL's wire protocol carries, traced by libpq itself (`PQtrace`).

Cursor events see the statements the registry sends, not the ones psycopg sends on its own
(the `BEGIN` of a transaction it opens, with its own wait for the reply). The trace sees
every message. A round trip ends with the server's `ReadyForQuery`: one per `Sync` of the
extended protocol (a pipeline sends one for all its statements) and one per simple query.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any, Self

import sqlalchemy as sa
from psycopg import pq

_PARSE = re.compile(r'^F\t\d+\tParse\t "([^"]*)" "([^\s"]+)')
_BIND = re.compile(r'^F\t\d+\tBind\t "[^"]*" "([^"]*)"')
_QUERY = re.compile(r'^F\t\d+\tQuery\t "([^\s"]+)')


class WireTrace:
    """Traces every connection `engine` checks out inside the block; `trips` after it.

    Each round trip is the list of statements (first word, upper-cased) the client sent
    before the server's `ReadyForQuery` that ended it. Outside a pipeline psycopg prepares
    a statement at its first execution on a connection in a round trip of its own (`Parse`
    alone); those are counted in `prepares`, not in `trips`.
    """

    def __init__(self, engine: Any) -> None:
        self.pool = engine.sync_engine.pool
        self._dir = tempfile.TemporaryDirectory(prefix="skillreg-wire-")
        self._files: list[tuple[int, Path]] = []

    def mark(self) -> int:
        """Where the checkouts from now on begin (for `trips(since=)`)."""
        return len(self._files)

    def _checkout(self, dbapi_connection: Any, *_args: Any) -> None:
        pgconn = dbapi_connection.driver_connection.pgconn
        path = Path(self._dir.name) / f"{len(self._files)}.trace"
        self._files.append((pgconn.backend_pid, path))
        # libpq writes through a FILE* on this descriptor and closes it at `untrace`.
        pgconn.trace(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)

    def _checkin(self, dbapi_connection: Any, *_args: Any) -> None:
        if dbapi_connection is not None:
            dbapi_connection.driver_connection.pgconn.untrace()

    def __enter__(self) -> Self:
        sa.event.listen(self.pool, "checkout", self._checkout)
        sa.event.listen(self.pool, "checkin", self._checkin)
        return self

    def __exit__(self, *_exc: object) -> None:
        sa.event.remove(self.pool, "checkout", self._checkout)
        sa.event.remove(self.pool, "checkin", self._checkin)

    def trips(self, since: int = 0) -> list[list[str]]:
        """The round trips of the checkouts from `since` on, checkout after checkout.

        A prepared statement is named by the first word of the text it was prepared with on
        its connection, inside the trace; `PREPARED` if that was before the trace began.
        """
        return self._read(since)[0]

    def prepares(self, since: int = 0) -> int:
        """The round trips that only prepared a statement, from `since` on."""
        return self._read(since)[1]

    def _read(self, since: int) -> tuple[list[list[str]], int]:
        parsed: dict[int, dict[str, str]] = {}
        trips: list[list[str]] = []
        prepares = 0
        for index, (pid, path) in enumerate(self._files):
            names = parsed.setdefault(pid, {})
            current: list[str] = []
            parsing = False
            for line in path.read_text().splitlines():
                if (parse := _PARSE.match(line)) is not None:
                    names[parse.group(1)] = parse.group(2).upper()
                    parsing = True
                elif (bind := _BIND.match(line)) is not None:
                    current.append(names.get(bind.group(1), "PREPARED"))
                elif (query := _QUERY.match(line)) is not None:
                    current.append(query.group(1).upper())
                elif line.startswith("B\t") and "\tReadyForQuery" in line:
                    if index >= since:
                        if current:
                            trips.append(current)
                        elif parsing:
                            prepares += 1
                    current, parsing = [], False
        return trips, prepares

    def close(self) -> None:
        self._dir.cleanup()
