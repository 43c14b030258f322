r"""Text from elsewhere, made safe to show: no control or formatting character reaches a terminal.

A registry a host syncs from, a problem document's `detail`, a name on disk: any of them can
carry an escape sequence (`ESC[2J` clears a screen, OSC 8 plants a hyperlink), a bidi
override that reorders what a reader sees, or a line break that forges a log line. `visible`
keeps every other character and writes those as `\uXXXX` escapes, and bounds the length.
"""

from __future__ import annotations

import unicodedata
from typing import Final

# Cc: C0, DEL and C1 controls; Cf: format characters (bidi overrides, zero-width joiners);
# Zl, Zp: the line and paragraph separators; Cs: lone surrogates (not encodable).
_HIDDEN: Final = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
ELLIPSIS: Final = "…"


def visible(text: str, limit: int = 500) -> str:
    """`text` with every control and formatting character escaped, at most `limit` characters.

    A text cut short ends with an ellipsis.
    """
    out: list[str] = []
    size = 0
    for char in text:
        shown = f"\\u{ord(char):04x}" if unicodedata.category(char) in _HIDDEN else char
        size += len(shown)
        if size > limit:
            out.append(ELLIPSIS)
            break
        out.append(shown)
    return "".join(out)
