"""Full-text search, the pure part: what a skill's document holds, and what a query means.

A document is the text of a skill's head: its name (the slug, hyphens read as spaces),
and from `SKILL.md` the description, the discovery triggers and the body. Triggers are
`metadata.triggers` in the frontmatter, one phrase a line, when the file has them.

A query is a list of words, all required. A word is a run of letters and digits (so
`pdf-report` is `pdf` and `report`, as the index splits it); a word ending in `*` matches
any word it starts (`repo*`). Words are compared after lower-casing and stemming
(`reports` finds `report`). English stop words are dropped from the query: PostgreSQL's
`english` configuration never indexes them and SQLite's FTS5 does, so dropping them keeps
the two databases' answers the same. Anything else in the query (quotes, operators,
column filters) is ignored, so no input reaches a database's query syntax.

Highlights travel through the databases' snippet functions as two private-use characters
(`MARK_START`, `MARK_END`), which indexed text never contains (`clean`), and come back as
plain text with character ranges (`split_highlights`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from registry.errors import FrontmatterInvalid, InvalidName

MARK_START: Final = "\ue000"
MARK_END: Final = "\ue001"
# A body is indexed up to this many characters: PostgreSQL refuses a tsvector over 1 MB,
# and a SKILL.md body is meant to be short (the spec suggests under 5,000 tokens).
MAX_INDEXED_BODY: Final = 128 * 1024
# Hits a search returns unless asked for fewer, and at most.
DEFAULT_LIMIT: Final = 20
MAX_LIMIT: Final = 100
MAX_TERMS: Final = 16
MAX_TERM_LENGTH: Final = 64

# PostgreSQL's `english` stop words (the Snowball list it ships as english.stop).
_STOP_WORDS: Final = """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what
    which who whom this that these those am is are was were be been being have has had
    having do does did doing a an the and but if or because as until while of at by for
    with about against between into through during before after above below to from up
    down in out on off over under again further then once here there when where why how
    all any both each few more most other some such no nor not only own same so than too
    very s t can will just don should now
"""
STOP_WORDS: Final = frozenset(_STOP_WORDS.split())

_WORD: Final = re.compile(r"[^\W_]+(\*?)")
_MARKS: Final = str.maketrans({MARK_START: " ", MARK_END: " "})


def clean(text: str) -> str:
    """`text` without the highlight markers (they are reserved for snippets)."""
    return text.translate(_MARKS)


def triggers_of(metadata: Mapping[str, str]) -> tuple[str, ...]:
    """The discovery triggers in a frontmatter's `metadata`: one phrase a line."""
    value = metadata.get("triggers")
    if not isinstance(value, str):
        return ()
    return tuple(line.strip() for line in value.splitlines() if line.strip())


@dataclass(frozen=True, slots=True)
class SearchText:
    """The searchable text of one skill's head."""

    name: str
    description: str
    triggers: tuple[str, ...]
    body: str


def search_text(slug: str, skill_md: bytes) -> SearchText:
    """The document of a skill whose head's `SKILL.md` is `skill_md`.

    A `SKILL.md` that no longer parses (a rule added after it was stored) is indexed as
    plain text: its name and whole content, no description or triggers.
    """
    # The parser (strictyaml) is imported by the writers and the indexer that call this,
    # not by every command that imports the query rules (`skillreg list`).
    from registry.domain.frontmatter import parse_skill_md  # noqa: PLC0415

    name = slug.replace("-", " ")
    try:
        parsed = parse_skill_md(skill_md, slug)
    except (FrontmatterInvalid, InvalidName):
        text = skill_md.decode("utf-8", errors="replace")
        return SearchText(name, "", (), clean(text[:MAX_INDEXED_BODY]))
    # A parser that reads the triggers itself exposes them as a field; else `metadata` has them.
    declared = getattr(parsed, "triggers", None)
    triggers = tuple(declared) if declared else triggers_of(parsed.metadata)
    return SearchText(
        name=name,
        description=clean(parsed.description),
        triggers=tuple(clean(t) for t in triggers),
        body=clean(parsed.body[:MAX_INDEXED_BODY]),
    )


@dataclass(frozen=True, slots=True)
class Term:
    """One query word: required, and matched as a prefix when `prefix`."""

    word: str
    prefix: bool = False


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A parsed query: the words every hit contains (empty: nothing can match)."""

    text: str
    terms: tuple[Term, ...]

    def fts5(self) -> str:
        """The FTS5 MATCH expression: every term quoted, all required."""
        return " AND ".join(f'"{t.word}"' + ("*" if t.prefix else "") for t in self.terms)

    def tsquery(self) -> str:
        """The `to_tsquery` expression: every term, all required (`:*` for a prefix)."""
        return " & ".join(t.word + (":*" if t.prefix else "") for t in self.terms)


def parse_query(text: str) -> SearchQuery:
    """Read a user's query (see the module docstring); never raises."""
    terms: list[Term] = []
    seen: set[Term] = set()
    for match in _WORD.finditer(text.lower()):
        word = match.group(0).rstrip("*")[:MAX_TERM_LENGTH]
        term = Term(word, prefix=bool(match.group(1)))
        if (word in STOP_WORDS and not term.prefix) or term in seen:
            continue
        seen.add(term)
        terms.append(term)
        if len(terms) == MAX_TERMS:
            break
    return SearchQuery(text, tuple(terms))


def split_highlights(marked: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """A snippet with markers -> (plain text, the [start, end) ranges they enclosed).

    Runs of white space (line breaks included) become one space, and the ends are
    trimmed: a snippet is shown on one line.
    """
    plain: list[str] = []
    ranges: list[tuple[int, int]] = []
    start: int | None = None
    for char in marked:
        if char == MARK_START:
            start = len(plain)
        elif char == MARK_END:
            if start is not None and len(plain) > start:
                ranges.append((start, len(plain)))
            start = None
        elif char.isspace():
            if plain and plain[-1] != " ":
                plain.append(" ")
        else:
            plain.append(char)
    while plain and plain[-1] == " ":
        plain.pop()
    trimmed = (_trim(plain, a, b) for a, b in ranges)
    return "".join(plain), tuple((a, b) for a, b in trimmed if a < b)


def _trim(plain: list[str], low: int, high: int) -> tuple[int, int]:
    """A range without the spaces at its ends (and within the text)."""
    high = min(high, len(plain))
    while low < high and plain[low] == " ":
        low += 1
    while high > low and plain[high - 1] == " ":
        high -= 1
    return low, high
