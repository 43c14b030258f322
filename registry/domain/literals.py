"""Where a few ASCII literals occur in a text: found in one pass, or searched for one by one.

The content check (registry/domain/scanner.py) tries its patterns only where one of their
literals occurs: a token's prefix (`sk-`, `AKIA`, `-----BEGIN `...) or a secret word of an
assignment's name (`pass`, `token`, `key`... in any case). It asks `next_at(literal,
position)`: the literal's first occurrence at or after `position`.

- Searched (`Searched`): each question is a `find` in the text. A text without a literal
  costs one pass over it per literal, about twenty in all: that was most of the time a
  large package's write took (about 110 ms for 10 MiB).
- Listed (`Listed`): an automaton finds every occurrence of every literal in one pass, and
  each question is a binary search in those lists. Two engines list: Hyperscan
  (`hyperscan`, the `fast-scan` extra), about 1 ms per MiB of prose on this kind of
  machine, and RE2 (`google-re2`, a dependency), about 3-6 ms per MiB. The fastest one
  installed lists (`ENGINE`); both give the same lists.

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

A guard (`Guard`) narrows the folded literals further where Hyperscan lists: instead of
every occurrence of a folded literal, it lists where a regex that opens with one ends
(`Occurrences.guarded`). The content check's folded literals are the secret words of an
assignment's name; prose holds them (`author`, `keyboard`, `tokens`) about once per 4 KiB,
and each occurrence cost a callback and a try of the assignment pattern in Python. Its
guard is the assignment's shape from the word on (name characters, a quote, `]`, blanks,
then `=` or `:`), which prose almost never has, and Hyperscan runs it in the same pass as
the cased literals. Other engines list the folded literals as before; the guard is an
optimisation, never a different answer (tests/domain/test_literals.py).
"""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Literal, Protocol

from registry.domain import windowed

try:
    import re2
except ImportError:  # pragma: no cover - google-re2 is a dependency; searching is tested
    re2 = None
try:
    import hyperscan
except ImportError:  # pragma: no cover - the `fast-scan` extra; RE2 lists the same
    hyperscan = None  # type: ignore[assignment]

Engine = Literal["hyperscan", "re2", "search"]


@dataclass(frozen=True, slots=True)
class Guard:
    """A regex over the probe that opens with one of the folded literals, and its reach.

    `pattern` is matched in any ASCII case; `reach` is the longest match it can have, so a
    match ending in a window starts at most `reach` bytes before it. `Listed.guarded` is
    then every position where a match of `pattern` ends (its last byte), in order.
    """

    pattern: bytes
    reach: int


ENGINES: Final[tuple[Engine, ...]] = (
    *(("hyperscan",) if hyperscan is not None else ()),
    *(("re2",) if re2 is not None else ()),
    "search",
)
"""The engines installed, fastest first: each lists the literals (but `search`) alike."""

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

    def guarded(self) -> list[int] | None:
        """Where the guard's matches end (their last byte), or None.

        None: ask for the folded literals instead (no guard, or an engine or a text that
        did not list it).
        """
        ...


def _check(cased: tuple[str, ...], folded: tuple[str, ...], guard: Guard | None) -> None:
    """Refuse what a probe could not hold, a literal both cased and folded, a guard of no reach."""
    both = set(cased) & set(folded)
    if both:
        msg = f"a literal is both cased and folded: {sorted(both)}"
        raise ValueError(msg)
    for literal in (*cased, *folded):
        if not literal or not literal.isascii() or _REPLACED in literal:
            msg = f"a literal must be non-empty ASCII without {_REPLACED!r}: {literal!r}"
            raise ValueError(msg)
    if guard is not None and guard.reach < 1:
        msg = f"a guard reaches at least one byte: {guard.reach}"
        raise ValueError(msg)


def _crowded(listed: int, at: int) -> bool:
    """Whether `listed` occurrences up to position `at` are no longer sparse (see above)."""
    return listed > (at + windowed.WINDOW) // SPARSE + 16


def _nowhere(_position: int) -> int:
    return -1


class Listed:
    """Every occurrence, listed in one pass: each question is a binary search.

    `ends`: where the guard's matches end, if the guard was listed in place of the folded
    literals (`unlisted`), which may then not be asked for.
    """

    def __init__(
        self,
        found: Mapping[str, list[int]],
        ends: list[int] | None = None,
        unlisted: Iterable[str] = (),
    ) -> None:
        self.found = found
        self.ends = ends
        self.unlisted = frozenset(unlisted)

    def next_at(self, literal: str, position: int) -> int:
        """See `Occurrences.next_at`."""
        positions = self.found.get(literal)
        if positions is None:
            if literal in self.unlisted:
                msg = f"{literal!r} was not listed: its guard was (`guarded`)"
                raise LookupError(msg)
            return -1
        index = bisect.bisect_left(positions, position)
        return positions[index] if index < len(positions) else -1

    def seeker(self, literal: str) -> Seek:
        """See `Occurrences.seeker`."""
        return partial(self.next_at, literal)

    def guarded(self) -> list[int] | None:
        """See `Occurrences.guarded`."""
        return self.ends


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

    def guarded(self) -> list[int] | None:
        """See `Occurrences.guarded`: never here."""
        return None


class Literals:
    """A set of literals: `cased` found as written, `folded` in any ASCII case.

    `engine`: what lists them while they are sparse (`ENGINE` unless given; `search`:
    never list, always search). Asking for an engine that is not installed is an error.
    `guard`: listed in place of the folded literals where Hyperscan lists (see above).
    """

    def __init__(
        self,
        cased: Iterable[str],
        folded: Iterable[str],
        *,
        engine: Engine | None = None,
        guard: Guard | None = None,
    ) -> None:
        self.cased = tuple(dict.fromkeys(cased))
        self.folded = tuple(dict.fromkeys(literal.lower() for literal in folded))
        _check(self.cased, self.folded, guard)
        self._longest = max(map(len, (*self.cased, *self.folded)), default=1)
        # The literals that may start with a byte: a folded one under both of its cases.
        self._by_first: dict[int, list[tuple[str, bytes, bool]]] = {}
        every = [*((c, False) for c in self.cased), *((f, True) for f in self.folded)]
        for literal, any_case in every:
            raw = literal.encode("ascii")
            for first in {raw[0], raw[:1].upper()[0]} if any_case else {raw[0]}:
                self._by_first.setdefault(first, []).append((literal, raw, any_case))
        self.guard = guard
        self.engine: Engine = ENGINE if engine is None else engine
        if self.engine not in ENGINES:
            msg = f"the {self.engine!r} engine is not installed"
            raise RuntimeError(msg)
        self._pattern = None
        self._database: Any = None
        self._guarded = False
        if self.engine == "re2" and every:
            alternatives = [re.escape(c.encode("ascii")) for c in self.cased]
            if self.folded:
                words = b"|".join(re.escape(f.encode("ascii")) for f in self.folded)
                alternatives.append(b"(?i:" + words + b")")
            self._pattern = re2.compile(b"|".join(alternatives))
        elif self.engine == "hyperscan" and every:
            self._compile_for_hyperscan(every)

    def _compile_for_hyperscan(self, every: list[tuple[str, bool]]) -> None:
        """One database of the literals, the guard (if any) in place of the folded ones."""
        guard = self.guard if self.folded else None
        self._guarded = guard is not None
        self._reach = 0 if guard is None else guard.reach
        listed = [(c, False) for c in self.cased] if self._guarded else every
        self._every = [(literal, len(literal)) for literal, _ in listed]
        expressions = [re.escape(literal.encode("ascii")) for literal, _ in listed]
        flags = [hyperscan.HS_FLAG_CASELESS if any_case else 0 for _, any_case in listed]
        if guard is not None:
            expressions.append(guard.pattern)
            flags.append(hyperscan.HS_FLAG_CASELESS)
        self._database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._database.compile(
            expressions=expressions, ids=list(range(len(expressions))), flags=flags
        )
        # Scratch space is per scan in progress: one per thread that scans.
        self._scratch = threading.local()

    def occurrences(self, text: str, probe: bytes | None = None) -> Occurrences:
        """The literals of `text`: listed if sparse (and an engine lists), else searched.

        `probe`: `text`'s ASCII probe if the caller has it (an ASCII text's own bytes are).
        """
        if probe is None:
            probe = windowed.ascii_probe(text)
        found = None
        if self._pattern is not None:
            found = self._listed(probe)
        elif self._database is not None:
            return self._listed_by_hyperscan(probe) or Searched(probe, self.cased, self.folded)
        if found is not None:
            return Listed(found)
        return Searched(probe, self.cased, self.folded)

    def _listed_by_hyperscan(self, probe: bytes) -> Listed | None:
        """`_listed` by Hyperscan, with the guard's ends if it has one.

        Hyperscan reports matches by where they end, in order.
        """
        scratch = getattr(self._scratch, "space", None)
        if scratch is None:
            scratch = self._scratch.space = hyperscan.Scratch(self._database)
        found: dict[str, list[int]] = {}
        ends: list[int] = []
        every, size, listed = self._every, len(probe), 0
        guard_id = len(every)  # the guard's id, if it was compiled
        reach = self._reach
        base = start = end = 0

        def on_match(index: int, _from: int, to: int, _flags: int, _context: object) -> bool:
            nonlocal listed
            if index == guard_id:
                at = base + to - 1  # the match's last byte
            else:
                literal, length = every[index]
                at = base + to - length
            if at < start or at >= end:
                return False  # the window before listed it, or the next one will
            listed += 1
            if _crowded(listed, at):
                return True  # stop the scan
            if index == guard_id:
                ends.append(at)
            else:
                found.setdefault(literal, []).append(at)
            return False

        for start in range(0, size, windowed.WINDOW):
            # A literal that starts in the window ends within the longest one past it; a
            # guard's match that ends in it starts within its reach before it.
            end = min(start + windowed.WINDOW, size)
            base = max(start - reach, 0)
            window = probe[base : min(end + self._longest - 1, size)]
            try:
                self._database.scan(window, match_event_handler=on_match, scratch=scratch)
            except hyperscan.ScanTerminated:
                return None
        if self._guarded:
            return Listed(found, ends, unlisted=self.folded)
        return Listed(found)

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
