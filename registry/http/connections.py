"""A deadline for every request head, which uvicorn's options cannot express.

The hazard: uvicorn (its h11 protocol) arms no timer while a connection waits for a
request. Its keep-alive timer starts only after a response, and any byte received cancels
it; `h11_max_incomplete_event_size` bounds the bytes of a head, not the time it takes. A
client that opens connections and sends nothing, or a request line one byte at a time,
holds each connection (a socket, buffers, a slot under `limit_concurrency`) for as long as
it likes: 100 of them held for 70 s were never closed.

The rule: a connection must deliver a whole request head (request line and headers)
within `header_timeout` seconds of opening, and again of the end of each response; a
connection that has not is closed, without an answer (as `timeout_keep_alive` closes an
idle one). Bytes that arrive do not reset the deadline, only a complete head ends it. The
body is not timed here: the app reads it within its own bounds (`limits.py`).

This is a subclass of uvicorn's h11 protocol that adds one timer through public names
(`connection_made`, `data_received`, `on_response_complete`, `connection_lost`, the
`conn`, `transport` and `loop` attributes; h11's `IDLE` state). `skillreg serve` always
runs it (uvicorn's `http` option takes a protocol class), whatever else is installed.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


class HeaderDeadline(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head is late."""

    header_timeout: ClassVar[float] = 10.0
    header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # h11 leaves IDLE on the client's side once a whole request head has been parsed.
        if self.conn.their_state is not h11.IDLE:
            self.disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # The connection is kept for the next request (a pipelined one may be complete
        # already): its head has the same time to arrive as the first one had.
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self.arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm()
        super().connection_lost(exc)

    def arm(self) -> None:
        self.disarm()
        self.header_timer = self.loop.call_later(self.header_timeout, self.late)

    def disarm(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def late(self) -> None:
        self.header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def header_deadline(seconds: float) -> type[HeaderDeadline]:
    """The protocol class for a server whose request heads must arrive within `seconds`."""
    return type("HeaderDeadline", (HeaderDeadline,), {"header_timeout": seconds})
