"""Search, find and decode a window at a time, so that no single call holds the GIL for long.

A call into C (`re.Pattern.search`, `bytes.find`, `bytes.decode`, `Counter.update`) holds
the GIL from start to end; a thread that runs one over a whole file stalls every other
thread, the event loop's included, for as long as it takes (docs/write-path.md has what a
regex search over a crafted file took). Between two calls the interpreter hands the GIL
over every switch interval (`sys.getswitchinterval()`). These functions return what the
whole-text call returns, in calls that each cover at most `WINDOW` characters (plus a
pattern's bounded reach), so a worker thread that uses them lets the loop run at least once
per window.
"""

from __future__ import annotations

import codecs
import re
from typing import AnyStr, Final

WINDOW: Final = 64 * 1024
"""Characters (or bytes) one call covers: a few milliseconds of the slowest search."""


ASCII_AT_ONCE: Final = 2 * 1024 * 1024
"""Up to this many bytes, ASCII data is decoded in one call: a copy, as fast as `memcpy`."""


def decode_utf8(data: bytes) -> str:
    """`data.decode("utf-8", errors="replace")`, a window at a time.

    ASCII data of at most `ASCII_AT_ONCE` bytes is decoded in one call: decoding ASCII is a
    copy, shorter than one window's slowest search, and decoding it by windows copied it
    twice (the windows, then their join). Telling ASCII apart is one pass of
    `bytes.isascii`, cheaper than the copy.
    """
    if len(data) <= WINDOW:
        return data.decode("utf-8", errors="replace")
    if len(data) <= ASCII_AT_ONCE and data.isascii():
        return data.decode("ascii")
    # The incremental decoder keeps a sequence cut by a window's end for the next window,
    # so the text is the one-shot decode's, replacement characters included.
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    view = memoryview(data)
    parts = [decoder.decode(view[at : at + WINDOW]) for at in range(0, len(data), WINDOW)]
    parts.append(decoder.decode(b"", final=True))
    return "".join(parts)


def find(haystack: AnyStr, needle: AnyStr, start: int = 0) -> int:
    """`haystack.find(needle, start)`, a window at a time."""
    size = len(haystack)
    if size - start <= WINDOW:
        return haystack.find(needle, start)
    while start < size:
        end = start + WINDOW
        # An occurrence that starts in the window ends within len(needle) - 1 past it.
        at = haystack.find(needle, start, end + len(needle) - 1)
        if at != -1:
            return at
        start = end
    return -1


def search(pattern: re.Pattern[str], text: str, start: int, reach: int) -> re.Match[str] | None:
    """`pattern.search(text, start)`, a window at a time, for a pattern of bounded reach.

    `reach` bounds how far past a position the pattern reads when tried there (its longest
    match, lookaheads included). Each call searches one window and `reach` characters
    more, so a try at a position in the window sees what it would see in the whole text;
    a match that starts past the window is left for the next window, where one that starts
    earlier may be found first. Lookbehinds see the text before `start`, as in the
    whole-text search.
    """
    size = len(text)
    if size - start <= WINDOW:
        return pattern.search(text, start)
    while start < size:
        end = start + WINDOW
        found = pattern.search(text, start, end + reach)
        if found is not None and found.start() < end:
            return found
        start = end
    return None


def ascii_probe(text: str) -> bytes:
    """`text.encode("ascii", "replace")`, a window at a time: one byte per character.

    Anything outside ASCII becomes `?`, so a position in the probe is the same position in
    the text, and an ASCII literal occurs in one exactly where it occurs in the other.
    """
    if len(text) <= WINDOW:
        return text.encode("ascii", "replace")
    return b"".join(
        text[at : at + WINDOW].encode("ascii", "replace") for at in range(0, len(text), WINDOW)
    )


def lower(data: bytes) -> bytes:
    """`data.lower()` (ASCII letters only), a window at a time."""
    if len(data) <= WINDOW:
        return data.lower()
    return b"".join(data[at : at + WINDOW].lower() for at in range(0, len(data), WINDOW))
