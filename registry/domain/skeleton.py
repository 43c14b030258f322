"""A name's look-alike skeleton: two names with one skeleton read alike to a person.

`λόγος` and `λόγοσ` differ only in the final sigma, which case folding makes one letter;
a case-insensitive file system then gives both one folder. `pdf-report` spelt with a
Cyrillic e (U+0435) differs from the Latin one only in the code point. Slugs are
identities (a key in the database, a folder on disk, a name an owner reads), so the
registry keeps one live skill per skeleton in a scope (docs/package-format.md).

    skeleton(name) = NFD(map(NFD(NFKC(casefold(name)))))

Case folding and NFKC first (`ß` and `ss`, `ﬁ` and `fi`, final and medial sigma), then Unicode's
confusable mapping (UTS #39, section 4, "skeleton"): each character becomes the
representative of its class of confusables, and the result is decomposed again.

The classes come from Unicode's `confusables.txt`, as the `confusable_homoglyphs` package
ships it (its data follows Unicode's releases; it is pure Python). That package keeps, for
every character, its homoglyphs in both directions, not the file's "source → prototype"
lines, so the classes are rebuilt here: every class of the file is a star, its prototype
linked to each character that maps to it (tests/domain/test_skeleton.py checks the
installed data). The
representative is the prototype wherever the star says which node it is (a class of three
or more, or a prototype of several characters such as `rn` for `m`); in a class of two
single characters the lower code point stands for both. Two names have one skeleton here
exactly when they have one in UTS #39: only the representative of a class differs, and
it differs for every member of the class alike. The display marks (U+200E, U+200F) that
the file's comments put around right-to-left characters are removed before the table is
built. The table is built once, on first use (about 9,600 characters, some 50 ms).

A skeleton is for comparing, never for showing (UTS #39 says as much): it mixes scripts.
Pure: no I/O but the package's data, read once.
"""

from __future__ import annotations

import functools
import unicodedata
from collections import defaultdict
from typing import Final

from confusable_homoglyphs import confusables

# The marks `confusables.txt` puts around right-to-left text in its comments, for display.
_DISPLAY_MARKS: Final = str.maketrans("", "", "\u200e\u200f")


def skeleton(name: str) -> str:
    """The look-alike skeleton of `name` (see the module docstring)."""
    folded = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", name.casefold()))
    table = _table()
    return unicodedata.normalize("NFD", "".join(table.get(c, c) for c in folded))


def look_alike(a: str, b: str) -> bool:
    """True if `a` and `b` have one skeleton."""
    return skeleton(a) == skeleton(b)


@functools.cache
def _table() -> dict[str, str]:
    """Every confusable character -> the representative of its class."""
    links: defaultdict[str, set[str]] = defaultdict(set)
    data: dict[str, list[dict[str, str]]] = confusables.confusables_data
    for key, homoglyphs in data.items():
        a = key.translate(_DISPLAY_MARKS)
        for glyph in homoglyphs:
            b = glyph["c"].translate(_DISPLAY_MARKS)
            if a and b and a != b:
                links[a].add(b)
                links[b].add(a)
    table: dict[str, str] = {}
    placed: set[str] = set()
    for start in links:
        if start in placed:
            continue
        members = _class_of(start, links)
        placed.update(members)
        representative = _representative(members, links)
        table.update({m: representative for m in members if len(m) == 1 and m != representative})
    # A prototype of several characters is written with each character's representative,
    # so that `rn` typed as two letters and `m` meet.
    return {c: "".join(table.get(p, p) for p in r) for c, r in table.items()}


def _class_of(start: str, links: dict[str, set[str]]) -> list[str]:
    members, todo, seen = [], [start], {start}
    while todo:
        node = todo.pop()
        members.append(node)
        for other in links[node] - seen:
            seen.add(other)
            todo.append(other)
    return members


def _representative(members: list[str], links: dict[str, set[str]]) -> str:
    longer = [m for m in members if len(m) > 1]
    if longer:
        return min(longer)  # a class holds at most one (the table is built from stars)
    if len(members) > 2:  # noqa: PLR2004 - two single characters are a class with no centre
        return max(members, key=lambda m: len(links[m]))
    return min(members)
