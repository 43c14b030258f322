"""What a learned skill must say: its Steps, and how to verify the result (docs/history.md).

A learning write (origin `learning`) is refused with `LearningIncomplete` unless the body
of its `SKILL.md` has

- a **Steps** section holding at least one line of content, and
- a **Verification** section holding at least one **concrete statement**: a line of at
  least three words that is not a placeholder (`TODO`, `TBD`, `N/A`, `none`, `...`,
  `to be defined`, ...), or a non-blank line of a fenced code block (a command to run).

A section is an ATX heading (`#` to `######`, up to three spaces of indentation) whose
text is `Steps` or `Verification` (case-insensitive, a trailing colon allowed), running to
the next heading of the same or a higher level. Headings inside fenced code blocks do not
count. Other origins are not checked. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from registry.errors import LearningIncomplete

STEPS: Final = "Steps"
VERIFICATION: Final = "Verification"

MIN_STATEMENT_WORDS: Final = 3

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?")
_WORD = re.compile(r"\w+")
_PLACEHOLDER = re.compile(
    r"^(?:todo|tbd|tba|n/?a|none|nothing|\.\.\.|…|placeholder|coming soon|fill (?:this )?in"
    r"|to be (?:written|decided|defined|done|added)|not yet|xxx)\b",
    re.IGNORECASE,
)


@dataclass
class _Section:
    level: int
    lines: list[tuple[str, bool]] = field(default_factory=list)  # (line, inside a fence)


def _sections(body: str) -> dict[str, _Section]:
    """The first Steps and Verification sections of `body`, by their canonical name."""
    wanted = {STEPS.casefold(): STEPS, VERIFICATION.casefold(): VERIFICATION}
    found: dict[str, _Section] = {}
    current: _Section | None = None
    fence: str | None = None
    for line in body.splitlines():
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            elif current is not None:
                current.lines.append((line, True))
            continue
        if opened:
            fence = opened.group(1)
            continue
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            if current is not None and level <= current.level:
                current = None
            name = wanted.get((heading.group(2) or "").strip().rstrip(":").strip().casefold())
            if name is not None and name not in found:
                current = found[name] = _Section(level)
            continue
        if current is not None:
            current.lines.append((line, False))
    return found


def _concrete(line: str, *, fenced: bool) -> bool:
    text = line.strip()
    if not text:
        return False
    if fenced:
        return True
    text = _LIST_MARKER.sub("", text).strip(" *_`>")
    if _PLACEHOLDER.match(text):
        return False
    return len(_WORD.findall(text)) >= MIN_STATEMENT_WORDS


def check_learned(body: str) -> None:
    """Raise `LearningIncomplete` unless `body` has Steps and a concrete Verification."""
    sections = _sections(body)
    steps = sections.get(STEPS)
    if steps is None:
        raise LearningIncomplete(STEPS, "no 'Steps' section (a '## Steps' heading)")
    if not any(line.strip() for line, _ in steps.lines):
        raise LearningIncomplete(STEPS, "the 'Steps' section is empty")
    verification = sections.get(VERIFICATION)
    if verification is None:
        raise LearningIncomplete(
            VERIFICATION, "no 'Verification' section (a '## Verification' heading)"
        )
    if not any(_concrete(line, fenced=fenced) for line, fenced in verification.lines):
        raise LearningIncomplete(
            VERIFICATION,
            "the 'Verification' section has no concrete statement (a line of at least "
            f"{MIN_STATEMENT_WORDS} words that is not a placeholder, or a command in a "
            "code block)",
        )
