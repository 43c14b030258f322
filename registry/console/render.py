"""HTML out: the template environment, escaping, and the console's URLs.

Every value a template prints is escaped (Jinja's autoescape) and then made *visible*:
control characters and the Unicode format characters that reorder or hide text (bidi
overrides and isolates, zero-width characters) are shown as a marked code point instead
of acting on the page, so a hostile skill name, description, file name or file content
cannot run a script, break out of an attribute, or make the text say something else than
it does. Values placed where the exact characters matter (a form field, a textarea) go
through `|exact`, which escapes but keeps every character.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

PREFIX: Final = "/console"
# C0 and C1 controls but tab and newline, DEL, and the format characters that reorder or
# hide text: ALM, zero-width space/joiners, LRM/RLM, LRE..RLO, word joiner..invisible plus,
# LRI..PDI, the BOM/ZWNBSP.
_HIDDEN: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)


def _mark(match: re.Match[str]) -> str:
    # No quotes in the markup: even misplaced inside a quoted attribute it cannot end it.
    return f"<span class=ctl>U+{ord(match.group()):04X}</span>"


def visible(value: object) -> Markup:
    """`value` as escaped HTML with every hidden or reordering character shown as such."""
    if isinstance(value, Markup):
        return value
    text = "" if value is None else str(value)
    return Markup(_HIDDEN.sub(_mark, str(escape(text))))  # noqa: S704 - escaped just before


def exact(value: object) -> Markup:
    """`value` escaped for an attribute or a textarea, every character kept."""
    return escape("" if value is None else str(value))


def has_hidden(value: str) -> bool:
    """True if `value` holds a character `visible` would mark."""
    return _HIDDEN.search(value) is not None


def url(*segments: object, **query: object) -> str:
    """A console URL: `url("acme", "decisions", page=2)` is `/console/acme/decisions?page=2`.

    Segments are percent-encoded whole (a `/` in one cannot add a level); query values that
    are None are left out.
    """
    path = "/".join(quote(str(s), safe="") for s in segments)
    args = {k: v for k, v in query.items() if v is not None}
    suffix = f"?{urlencode(args)}" if args else ""
    return f"{PREFIX}/{path}{suffix}"


def when(value: datetime | None) -> str:
    """A timestamp as people read it, in UTC to the second."""
    if value is None:
        return ""
    return value.strftime("%Y-%m-%d %H:%M:%S UTC")


def size(value: int | None) -> str:
    """A byte count, short: `812 B`, `4.2 KiB`, `1.5 MiB`."""
    if value is None:
        return ""
    amount = float(value)
    for unit in ("B", "KiB", "MiB"):
        if amount < 1024 or unit == "MiB":  # noqa: PLR2004 - the unit step
            return f"{int(amount)} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    raise AssertionError  # pragma: no cover - the loop returns


def diff_class(line: str) -> str:
    """The CSS class of a unified-diff line."""
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"


def environment() -> Environment:
    """The console's templates (shipped in the package), escaping everything they print."""
    env = Environment(
        loader=PackageLoader("registry.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        finalize=visible,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(exact=exact, when=when, size=size, diff_class=diff_class)
    env.globals.update(url=url, has_hidden=has_hidden)
    return env


def render(env: Environment, template: str, context: Mapping[str, Any]) -> str:
    return env.get_template(template).render(context)
