"""Where a few ASCII literals occur in a text: found in one pass, or searched for one by one.

The content check (registry/domain/scanner.py) tries its patterns only where one of their
literals occurs: a token's prefix (`sk-`, `AKIA`, `-----BEGIN `...) or a secret word of an
assignment's name (`pass`, `token`, `key`... in any case). It asks `next_at(literal,
position)`: the literal's first occurrence at or after `position`.

- Searched (`Searched`): each question is a `find` in the text. A text without a literal
  costs one pass over it per literal, about twenty in all: most of the time a large
  package's write took.
- Listed (`Listed`): RE2's automaton (`google-re2`, a dependency) finds every occurrence
  of every literal in one pass, and each question is a binary search in those lists
  (`ENGINE`). On prose this is about five times faster than searching
  (docs/benchmarks.md, "The content check's engines").

Listing costs a few microseconds per occurrence, so a text crowded with literals (a file
of `keykeykey...`, crafted or not) would cost far more listed than searched: the search
skips what a match or a long name already covers, a list cannot. `Literals.occurrences`
lists while the occurrences stay sparse and otherwise searches; both answer every question
the same. Sparse: up to any position, at most one occurrence per `SPARSE` characters read
(plus a window's worth and a few), so a crowded stretch stops the listing within about a
window of it, after a few hundred occurrences at most.

Both run over a probe of the text: one byte per character, anything outside ASCII replaced
by `?` (which no literal contains), so a position in the probe is the same position in the
text. Like every search of the content check, each call into C covers at most a window of
text (registry/domain/windowed.py).

Hyperscan, an optional engine, listed them too until the same measurements showed what it
bought at the registry's limits: little on the largest package, and nothing where the time
goes to the patterns' tries rather than to finding the literals.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Final, Literal, Protocol

from registry.domain import windowed

try:
    import re2
except ImportError:  # pragma: no cover - google-re2 is a dependency; searching is tested
    re2 = None

Engine = Literal["re2", "search"]

ENGINES: Final[tuple[Engine, ...]] = (*(("re2",) if re2 is not None else ()), "search")
"""The engines installed, fastest first: `re2` lists the literals, `search` never does."""

ENGINE: Final[Engine] = ENGINES[0]
"""The engine a `Literals` uses unless told otherwise."""

SPARSE: Final = 256
"""Characters per occurrence below which a text's literals are searched for, not listed."""

_REPLACED: Final = "?"


Seek = Callable[[int], int]
"""One literal's `next_at`: the first position at or after the one given, or -1."""


class Occurrences(Protocol):
    """The literals of one text."""

    def next_at(self, literal: str, position: int) -> int:
        """The first position at or after `position` where `literal` starts, or -1.

        A folded literal is asked for in lower case and found in any ASCII case.
        """
        ...

    def seeker(self, literal: str) -> Seek:
        """`next_at` for one literal, for a caller that asks about it again and again."""
        ...


def _check(cased: tuple[str, ...], folded: tuple[str, ...]) -> None:
    """Refuse what a probe could not hold, and a literal both cased and folded."""
    both = set(cased) & set(folded)
    if both:
        msg = f"a literal is both cased and folded: {sorted(both)}"
        raise ValueError(msg)
    for literal in (*cased, *folded):
        if not literal or not literal.isascii() or _REPLACED in literal:
            msg = f"a literal must be non-empty ASCII without {_REPLACED!r}: {literal!r}"
            raise ValueError(msg)


def _crowded(listed: int, at: int) -> bool:
    """Whether `listed` occurrences up to position `at` are no longer sparse (see above)."""
    return listed > (at + windowed.WINDOW) // SPARSE + 16


def _nowhere(_position: int) -> int:
    return -1


class Listed:
    """Every occurrence, listed in one pass: each question is a binary search."""

    def __init__(self, found: Mapping[str, list[int]]) -> None:
        self.found = found

    def next_at(self, literal: str, position: int) -> int:
        """See `Occurrences.next_at`."""
        positions = self.found.get(literal)
        if positions is None:
            return -1
        index = bisect.bisect_left(positions, position)
        return positions[index] if index < len(positions) else -1

    def seeker(self, literal: str) -> Seek:
        """See `Occurrences.seeker`."""
        return partial(self.next_at, literal)


class Searched:
    """No list: each question is a `find` in the probe (or in its lower-cased copy)."""

    def __init__(self, probe: bytes, cased: Iterable[str], folded: Iterable[str]) -> None:
        self._probe = probe
        self._cased = {literal: literal.encode("ascii") for literal in cased}
        self._folded = {literal: literal.encode("ascii") for literal in folded}
        self._lowered: bytes | None = None

    def next_at(self, literal: str, position: int) -> int:
        """See `Occurrences.next_at`."""
        return self.seeker(literal)(position)

    def seeker(self, literal: str) -> Seek:
        """See `Occurrences.seeker`."""
        raw = self._cased.get(literal)
        if raw is not None:
            return partial(windowed.find, self._probe, raw)
        raw = self._folded.get(literal)
        if raw is None:
            return _nowhere
        if self._lowered is None:
            self._lowered = windowed.lower(self._probe)
        return partial(windowed.find, self._lowered, raw)


class Literals:
    """A set of literals: `cased` found as written, `folded` in any ASCII case.

    `engine`: what lists them while they are sparse (`ENGINE` unless given; `search`:
    never list, always search). Asking for an engine that is not installed is an error.
    """

    def __init__(
        self, cased: Iterable[str], folded: Iterable[str], *, engine: Engine | None = None
    ) -> None:
        self.cased = tuple(dict.fromkeys(cased))
        self.folded = tuple(dict.fromkeys(literal.lower() for literal in folded))
        _check(self.cased, self.folded)
        self._longest = max(map(len, (*self.cased, *self.folded)), default=1)
        # The literals that may start with a byte: a folded one under both of its cases.
        self._by_first: dict[int, list[tuple[str, bytes, bool]]] = {}
        every = [*((c, False) for c in self.cased), *((f, True) for f in self.folded)]
        for literal, any_case in every:
            raw = literal.encode("ascii")
            for first in {raw[0], raw[:1].upper()[0]} if any_case else {raw[0]}:
                self._by_first.setdefault(first, []).append((literal, raw, any_case))
        self.engine: Engine = ENGINE if engine is None else engine
        if self.engine not in ENGINES:
            msg = f"the {self.engine!r} engine is not installed"
            raise RuntimeError(msg)
        self._pattern = None
        if self.engine == "re2" and every:
            alternatives = [re.escape(c.encode("ascii")) for c in self.cased]
            if self.folded:
                words = b"|".join(re.escape(f.encode("ascii")) for f in self.folded)
                alternatives.append(b"(?i:" + words + b")")
            self._pattern = re2.compile(b"|".join(alternatives))

    def occurrences(self, text: str, probe: bytes | None = None) -> Occurrences:
        """The literals of `text`: listed if sparse (and an engine lists), else searched.

        `probe`: `text`'s ASCII probe if the caller has it (an ASCII text's own bytes are).
        """
        if probe is None:
            probe = windowed.ascii_probe(text)
        if self._pattern is not None:
            found = self._listed(probe)
            if found is not None:
                return Listed(found)
        return Searched(probe, self.cased, self.folded)

    def _listed(self, probe: bytes) -> dict[str, list[int]] | None:
        """Every occurrence of every literal, or None as soon as they are not sparse."""
        found: dict[str, list[int]] = {}
        search, size, by_first = self._pattern.search, len(probe), self._by_first  # type: ignore[union-attr]
        position = listed = 0
        while position < size:
            # A literal that starts in the window ends within the longest one past it.
            end = min(position + windowed.WINDOW, size)
            match = search(probe, position, min(end + self._longest - 1, size))
            if match is None or match.start() >= end:
                position = end
                continue
            at = match.start()
            listed += 1
            if _crowded(listed, at):
                return None
            # The automaton reports one literal per position; every one that starts here
            # is recorded, and the search resumes one byte on, so overlaps are found too.
            for literal, raw, any_case in by_first[probe[at]]:
                piece = probe[at : at + len(raw)]
                if (piece.lower() if any_case else piece) == raw:
                    found.setdefault(literal, []).append(at)
            position = at + 1
        return found
