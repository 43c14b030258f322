"""Round trips seen through an engine's cursor events.

A round trip is a run of statements sent before any reply came back: each statement sent
through `Connection.execute` is one (libpq's own trace, `tests/support/wire.py`, also sees
what the driver sends by itself and what it pipelines). Each statement is recorded by its
first word, upper-cased.
"""

from __future__ import annotations

from typing import Any, Self

import sqlalchemy as sa


class RoundTrips:
    """Records `trips` while `recording`; a context manager that listens on `engine`."""

    def __init__(self, engine: Any, *, recording: bool = True) -> None:
        self.engine = engine.sync_engine
        self.recording = recording
        self.trips: list[list[str]] = []
        self._replied = True

    @property
    def statements(self) -> list[str]:
        return [s for trip in self.trips for s in trip]

    def start(self) -> None:
        """Forget what was recorded and record from now on."""
        self.recording, self.trips, self._replied = True, [], True

    def stop(self) -> None:
        self.recording = False

    def _sent(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if not self.recording:
            return
        if self._replied:
            self.trips.append([])
            self._replied = False
        self.trips[-1].append(statement.split(maxsplit=1)[0].upper())

    def _reply(self, *_args: Any) -> None:
        self._replied = True

    def listen(self) -> Self:
        sa.event.listen(self.engine, "before_cursor_execute", self._sent)
        sa.event.listen(self.engine, "after_cursor_execute", self._reply)
        return self

    def __enter__(self) -> Self:
        return self.listen()

    def __exit__(self, *_exc: object) -> None:
        sa.event.remove(self.engine, "before_cursor_execute", self._sent)
        sa.event.remove(self.engine, "after_cursor_execute", self._reply)
