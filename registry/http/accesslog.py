"""The access log without query strings.

uvicorn's access log records each request's target, query string included; a client that
sends a token as `?access_token=...` (some tools do) would leave it in the log, for as
long as logs are kept, readable by whoever reads them. This filter, installed on the
access logger by `skillreg serve`, replaces every query string in a record's arguments by
`?[redacted]`: the path and the status are what an operator needs from that line.
"""

from __future__ import annotations

import logging
from typing import Final

ACCESS_LOGGER: Final = "uvicorn.access"
REDACTED: Final = "?[redacted]"


def redact_query(target: str) -> str:
    """`target` with its query string, if any, replaced by `?[redacted]`."""
    path, sep, _ = target.partition("?")
    return f"{path}{REDACTED}" if sep else target


class RedactQueryStrings(logging.Filter):
    """Redacts the query string of every string argument of a record (see the module)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                redact_query(arg) if isinstance(arg, str) else arg for arg in record.args
            )
        return True


def install(logger_name: str = ACCESS_LOGGER) -> RedactQueryStrings:
    """Add the filter to the access logger; returns it (to remove it again)."""
    redactor = RedactQueryStrings()
    logging.getLogger(logger_name).addFilter(redactor)
    return redactor
