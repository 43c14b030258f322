"""The content check: find credential-like values in package files, without keeping them.

A `Scanner` turns a file's bytes into `Finding`s. A finding records where a value was found
(path, 1-based line, ordinal among the file's findings) and what it looked like (the pattern
class), plus `value_hash`, a keyed BLAKE3 of the value: enough for an owner's later
approval to be stored as an exact-match hash, never the value itself. Neither a finding nor
the `ContentBlocked` error built from it holds, shows or logs the matched text.

`fingerprint` names the scanner's rule set. A service that caches "this digest scanned
clean" keys the cache by digest and fingerprint, so changing a pattern rescans everything.

`DefaultScanner` looks for well-known token formats (AWS, GitHub, Slack, Stripe, Google,
OpenAI, Anthropic, JWT), private key blocks, and high-entropy values assigned to
secret-looking names. Text is decoded as UTF-8 with replacement, and binary files are
scanned the same way, so a key embedded in a binary is still caught.

It works in short steps, whatever a file holds: no pattern backtracks more than a bounded
amount where it is tried, and no single call into C (a regex search, a decode, a count)
covers more than a window of text (registry/domain/windowed.py), so the GIL, which `re`
holds for the whole of a call, is never held for long. That is what lets a worker thread
scan a large package while the event loop keeps serving (docs/write-path.md).
"""

from __future__ import annotations

import bisect
import heapq
import re
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from blake3 import blake3

from registry.domain import values, windowed
from registry.domain.literals import Listed, Literals, Occurrences, Seek
from registry.domain.values import GENERIC_MIN_ENTROPY, GENERIC_MIN_LENGTH, TOKEN_MIN_ENTROPY
from registry.errors import ContentBlocked

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence

    from registry.domain.model import PackageFile

FINDING_KEY_CONTEXT: Final = "skillreg 2026-11 content finding v1"
"""The BLAKE3 key-derivation context of `Finding.value_hash`."""

# The pattern classes: stable names recorded in findings and errors (not credentials, which
# is what S105 suspects of a string assigned to a name like GITHUB_TOKEN).
AWS_ACCESS_KEY_ID: Final = "aws_access_key_id"
AWS_SECRET_ACCESS_KEY: Final = "aws_secret_access_key"  # noqa: S105
PRIVATE_KEY: Final = "private_key"
GITHUB_TOKEN: Final = "github_token"  # noqa: S105
SLACK_TOKEN: Final = "slack_token"  # noqa: S105
STRIPE_KEY: Final = "stripe_key"
GOOGLE_API_KEY: Final = "google_api_key"
OPENAI_KEY: Final = "openai_key"
ANTHROPIC_KEY: Final = "anthropic_key"
JWT: Final = "jwt"
GENERIC_SECRET: Final = "generic_secret"  # noqa: S105

PATTERN_CLASSES: Final = (
    AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY,
    PRIVATE_KEY,
    GITHUB_TOKEN,
    SLACK_TOKEN,
    STRIPE_KEY,
    GOOGLE_API_KEY,
    OPENAI_KEY,
    ANTHROPIC_KEY,
    JWT,
    GENERIC_SECRET,
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One credential-like value: where it is and what it looks like, never what it is.

    `ordinal` is 1-based within the file, in order of position; `line` is 1-based;
    `value_hash` is `value_hash(value)`, for exact-match approvals.
    """

    path: str
    pattern_class: str
    ordinal: int
    line: int
    value_hash: str


class Scanner(Protocol):
    """The content check seam. Implementations must be pure and deterministic.

    The services run `scan` in a worker thread for a large package, which frees the event
    loop only if `scan` never holds the GIL for long in one call into C (a regex search over
    a whole file does): see `registry/domain/windowed.py`.
    """

    @property
    def fingerprint(self) -> str:
        """Names the rule set: equal fingerprints find the same things in the same bytes."""
        ...

    def scan(self, path: str, data: bytes) -> list[Finding]:
        """Return the findings in one file, ordinals 1..n in order of position."""
        ...


def value_hash(value: str) -> str:
    """Return the keyed hash a finding records in place of `value` (hex BLAKE3, derive-key)."""
    return blake3(value.encode("utf-8"), derive_key_context=FINDING_KEY_CONTEXT).hexdigest()


# ---------------------------------------------------------------- rules


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern_class: str
    pattern: re.Pattern[str]
    accept: Callable[[str], bool]
    # What every match of `pattern` opens with, tried at the same position: its literal
    # prefix, its lookbehind and the bounded part after them, at most `_START_REACH`
    # characters (the tests hold every match to it).
    start: re.Pattern[str]
    # Literals one of which every match holds, `offset` characters after its start: the
    # pattern is tried only where one occurs (`literals.Literals` finds them all in one
    # pass), since the regex engine cannot skip ahead to a prefix that opens with a
    # character class or a common letter.
    literals: tuple[str, ...]
    offset: int = 0


def _rule(
    pattern_class: str,
    pattern: str,
    accept: Callable[[str], bool],
    *,
    start: str,
    literals: tuple[str, ...],
    offset: int = 0,
) -> _Rule:
    return _Rule(
        pattern_class,
        re.compile(pattern, re.ASCII),
        accept,
        re.compile(start, re.ASCII),
        literals,
        offset,
    )


_START_REACH: Final = 64
"""The longest text a rule's `start` reads from where it is tried."""

# Listed most specific first: where two rules match overlapping text, the earlier one wins
# (an `sk-ant-` key is an Anthropic key, not an OpenAI one; a GitHub token assigned to
# `token = ...` is a GitHub token, not a generic secret). Each pattern's `value` group is
# what is hashed. Every pattern opens with its literal prefix, which lets the regex engine
# skip ahead to candidates (about thirty times faster than opening with a lookbehind); the
# lookbehind that keeps a match from starting inside a longer token comes after the prefix
# and looks back past it, and a lookahead keeps it from ending inside one.
#
# No try backtracks more than a bounded amount: a run that what follows could never take a
# character back from is possessive (a JWT segment ends at a `.`, which the run cannot
# hold: `{8,}+`), so a failed try costs one pass over it, and a PEM header line is taken
# whole (below). The lengths a run may have are bounded, or the run is possessive.
_RULES: Final = (
    _rule(
        PRIVATE_KEY,
        r"(?P<value>-----BEGIN [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----"
        # PEM headers (Proc-Type, DEK-Info) or PGP armour headers (Version, Comment). A
        # header line is taken whole: the body starts after the headers, never inside one
        # (letting it start anywhere in them made a failed try cost every split of their
        # trailing spaces, exponential in the number of header lines).
        r"(?:[ \t]*+\r?\n[A-Za-z0-9-]{1,40}:[^\r\n]*+){0,8}"
        # at least 40 characters of base64 body: "MIIEow...\n" in documentation is not a key
        r"\s{0,8}[A-Za-z0-9+/]{40}[A-Za-z0-9+/=\s]*"
        r"(?:-----END [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----)?)",
        values.any_value,
        start=r"-----BEGIN [A-Z0-9 ]{0,40}?PRIVATE KEY",
        literals=("-----BEGIN ",),
    ),
    _rule(
        AWS_ACCESS_KEY_ID,
        r"(?P<value>A[KS]IA(?<![A-Za-z0-9]A[KS]IA)[A-Z0-9]{16})(?![A-Za-z0-9])",
        values.token_value,
        start=r"A[KS]IA(?<![A-Za-z0-9]A[KS]IA)[A-Z0-9]{16}",
        literals=("AKIA", "ASIA"),
    ),
    _rule(
        GITHUB_TOKEN,
        r"(?P<value>g(?<![A-Za-z0-9_]g)"
        r"(?:h[pousr]_[A-Za-z0-9]{36,251}|ithub_pat_[A-Za-z0-9_]{22,244}))(?![A-Za-z0-9_])",
        values.token_value,
        start=r"g(?<![A-Za-z0-9_]g)(?:h[pousr]_[A-Za-z0-9]{36}|ithub_pat_[A-Za-z0-9_]{22})",
        literals=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _rule(
        SLACK_TOKEN,
        r"(?P<value>xox(?<![A-Za-z0-9]xox)[abprs]-"
        r"[A-Za-z0-9]{1,64}+(?:-[A-Za-z0-9]{1,64}+){1,6}+)(?![A-Za-z0-9-])",
        values.slack_token,
        start=r"xox(?<![A-Za-z0-9]xox)[abprs]-[A-Za-z0-9]",
        literals=("xox",),
    ),
    _rule(
        STRIPE_KEY,
        r"(?P<value>[sr]k_live_(?<![A-Za-z0-9][sr]k_live_)[A-Za-z0-9]{16,247})(?![A-Za-z0-9])",
        values.token_value,
        start=r"[sr]k_live_(?<![A-Za-z0-9][sr]k_live_)[A-Za-z0-9]{16}",
        literals=("k_live_",),
        offset=1,
    ),
    _rule(
        GOOGLE_API_KEY,
        r"(?P<value>AIza(?<![A-Za-z0-9_-]AIza)[A-Za-z0-9_-]{35})(?![A-Za-z0-9_-])",
        values.token_value,
        start=r"AIza(?<![A-Za-z0-9_-]AIza)[A-Za-z0-9_-]{35}",
        literals=("AIza",),
    ),
    _rule(
        ANTHROPIC_KEY,
        r"(?P<value>sk-ant-(?<![A-Za-z0-9_-]sk-ant-)[A-Za-z0-9_-]{32,})(?![A-Za-z0-9_-])",
        values.token_value,
        start=r"sk-ant-(?<![A-Za-z0-9_-]sk-ant-)[A-Za-z0-9_-]{32}",
        literals=("sk-ant-",),
    ),
    _rule(
        OPENAI_KEY,
        r"(?P<value>sk-(?<![A-Za-z0-9_-]sk-)(?!ant-)[A-Za-z0-9_-]{20,})(?![A-Za-z0-9_-])",
        values.mixed_token,
        start=r"sk-(?<![A-Za-z0-9_-]sk-)(?!ant-)[A-Za-z0-9_-]{20}",
        literals=("sk-",),
    ),
    _rule(
        JWT,
        r"(?P<value>eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+"
        r"\.[A-Za-z0-9_-]{16,}+)(?![A-Za-z0-9_.-])",
        values.token_value,
        start=r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8}",
        literals=("eyJ",),
    ),
)


def _rule_matches(
    rule: _Rule, text: str, found: Occurrences | None = None
) -> Iterator[re.Match[str]]:
    """Every match of `rule.pattern` in `text`: exactly what `finditer` finds.

    `finditer` searches for the pattern itself, and one search runs on until it finds a
    match, over the whole text if there is none. A match opens with the rule's `start`,
    `rule.offset` characters before one of its literals: this tries the pattern only there,
    in order, and resumes where `finditer` would (after a match, or one character after a
    failed try). Each try sees the whole text. `found`: the text's literals, when the
    caller has them; listed, they give the places to try, else `start` is searched for (in
    a text crowded with literals the regex engine skips a failed place without returning).
    """
    if found is None:
        found = _LITERALS.occurrences(text)
    if isinstance(found, Listed):
        yield from _listed_matches(rule, text, found)
        return
    if all(found.next_at(literal, 0) == -1 for literal in rule.literals):
        return
    position = 0
    while (start := windowed.search(rule.start, text, position, _START_REACH)) is not None:
        match = rule.pattern.match(text, start.start())
        if match is None:
            position = start.start() + 1
        else:
            yield match
            position = match.end()


def _listed_matches(rule: _Rule, text: str, found: Listed) -> Iterator[re.Match[str]]:
    offset = rule.offset
    # The next occurrence of each of the rule's literals, the nearest first.
    nearest = [
        (at, literal) for literal in rule.literals if (at := found.next_at(literal, offset)) != -1
    ]
    heapq.heapify(nearest)
    while nearest:
        start = nearest[0][0] - offset
        match = rule.pattern.match(text, start)
        resume = start + 1 if match is None else match.end()
        if match is not None:
            yield match
        while nearest and nearest[0][0] - offset < resume:
            literal = heapq.heappop(nearest)[1]
            at = found.next_at(literal, resume + offset)
            if at != -1:
                heapq.heappush(nearest, (at, literal))


# A name, an assignment (`=`, `:`, `:=`, `=>`, after an optional closing quote or bracket of
# a key) and a quoted or bare value; `values.is_secret_name` and `values.generic_value`
# judge the parts.
# The name starts where a run of identifier characters starts (or after the `--` of a
# command-line flag), so each run is tried once and scanning stays linear in the text. The
# lookahead admits only names containing a word `values.is_secret_name` could accept, so an
# ordinary assignment (`args: --password=...`) never consumes the text of a secret one.
_ASSIGNMENT: Final = re.compile(
    r"(?:(?<![A-Za-z0-9_.$-])|(?<=(?<![A-Za-z0-9_.$-])--))"
    r"(?P<name>(?=[A-Za-z0-9_.-]{0,63}?(?i:pass|pwd|secret|token|auth|credential|key))"
    r"[A-Za-z_][A-Za-z0-9_.-]{0,63})[\"'`]?\]?"
    r"[ \t]{0,8}(?:=>|:=|=|:)[ \t]{0,8}"
    r"(?:(?P<quote>[\"'`])(?P<quoted>[^\"'`\r\n]{1,512})(?P=quote)"
    r"|(?P<bare>[^\s\"'`,;)\]}]{1,512}))",
    re.ASCII,
)
# The assignment pattern cannot open with a literal (a name starts wherever a run of
# identifier characters does), so `finditer` tries it at every position of the text: about
# 5 MB/s, most of the time a large package's write took. Every match's name contains one
# of these words within its first 64 characters (the lookahead above, ASCII case-folded),
# and a name starts either where its run of name characters starts or just after a `--`
# that opens the run (the two lookbehinds). So for each occurrence of a word, the start of
# the run it sits in (looking back a little further than a name reaches) gives the only
# positions where a match using that word can start; `assignment_matches` tries those.
_ASSIGNMENT_WORDS: Final = ("pass", "pwd", "secret", "token", "auth", "credential", "key")
_NAME_CHARACTERS: Final = string.ascii_letters + string.digits + "_.-"
_NAME_OPENERS: Final = string.ascii_letters + "_"
_NOT_NAME: Final = re.compile(r"[^A-Za-z0-9_.-]")
_LOOK_BACK: Final = 68  # a name's 64 characters, the `--` before it, and a margin


def _word_starts(text: str, seek: Seek, at: int) -> Iterator[int]:
    """The positions where a match whose name holds a word may start, in increasing order.

    `seek` finds the word's next occurrence (`Occurrences.seeker`); `at` is its first.
    """
    previous = -1
    while at != -1:
        window = max(at - _LOOK_BACK, 0)
        # The run of name characters that ends at the word starts after the last character
        # that is not one; a run longer than the window starts too far back for this word
        # to be in its name, unless the window reaches the text's start.
        run = window + len(text[window:at].rstrip(_NAME_CHARACTERS))
        if run == window and window > 0:
            # The run starts too far back for every later occurrence in it as well: go on
            # from the run's end.
            end = windowed.search(_NOT_NAME, text, at, 1)
            at = -1 if end is None else seek(end.start())
            continue
        if run != previous:
            previous = run
            # A name opens with a letter or `_` (no match starts anywhere else), or just
            # after the `--` of a flag.
            if text.startswith("--", run):
                yield run + 2
            elif text[run] in _NAME_OPENERS:
                yield run
        at = seek(at + 1)


def _assignment_starts(text: str, found: Occurrences | None = None) -> list[int]:
    """The positions where an assignment match may start, in order (a superset).

    `found`: the text's literals, when the caller has them.
    """
    if found is None:
        found = _LITERALS.occurrences(text)
    words = []
    for word in _ASSIGNMENT_WORDS:
        seek = found.seeker(word)
        at = seek(0)
        if at != -1:
            words.append(_word_starts(text, seek, at))
    if not words:
        return []
    # Merged rather than collected and sorted: one sort of every start of a file full of
    # secret words would be one long call.
    merged = words[0] if len(words) == 1 else heapq.merge(*words)
    starts: list[int] = []
    for position in merged:
        if not starts or position != starts[-1]:
            starts.append(position)
    return starts


def assignment_matches(text: str, found: Occurrences | None = None) -> Iterator[re.Match[str]]:
    """Every match of the assignment pattern in `text`: exactly what `finditer` finds.

    `finditer` tries each position in turn and resumes after a match; this tries, in the
    same order and with the same resumption, only the positions where a match may start
    (at every other one the pattern's lookbehinds or lookahead fail). Each try sees the
    whole text and reads at most a name and a value ahead.
    """
    resume = 0
    for position in _assignment_starts(text, found):
        if position < resume:
            continue
        match = _ASSIGNMENT.match(text, position)
        if match is not None:
            yield match
            resume = match.end()


# Every literal the content check looks for (registry/domain/literals.py):
# the rules' prefixes as written, the assignment's words in any case (as the pattern folds
# them, in ASCII only).
_LITERALS: Final = Literals(
    cased=[literal for rule in _RULES for literal in rule.literals],
    folded=_ASSIGNMENT_WORDS,
)


# An assignment whose name is an AWS secret key's and whose value has its shape (40
# characters of base64) is an `aws_secret_access_key` finding rather than a generic one.
_AWS_SECRET_NAME: Final = re.compile(
    r"(?:aws[_.-]?)?secret[_.-]?access[_.-]?key|aws[_.-]?secret[_.-]?key",
    re.ASCII | re.IGNORECASE,
)
_AWS_SECRET_VALUE: Final = re.compile(r"[A-Za-z0-9/+]{40}", re.ASCII)


_LOGIC_VERSION: Final = 1


def _fingerprint() -> str:
    # The patterns are hashed so that editing one changes the fingerprint by itself; the
    # acceptance logic is code, so `_LOGIC_VERSION` must be bumped when it changes.
    parts = [f"logic={_LOGIC_VERSION}", f"placeholders={values.PLACEHOLDER_MARKERS!r}"]
    parts += [f"{r.pattern_class}\t{r.pattern.pattern}\t{r.accept.__name__}" for r in _RULES]
    parts += [
        f"{GENERIC_SECRET}\t{_ASSIGNMENT.pattern}",
        f"{AWS_SECRET_ACCESS_KEY}\t{_AWS_SECRET_NAME.pattern}\t{_AWS_SECRET_VALUE.pattern}",
        f"thresholds={GENERIC_MIN_LENGTH},{GENERIC_MIN_ENTROPY},{TOKEN_MIN_ENTROPY}",
        f"words={sorted(values.SECRET_WORDS)},{sorted(values.KEY_QUALIFIERS)},{sorted(values.DESCRIPTIVE_SUFFIXES)}",
    ]
    return "default-" + blake3("\n".join(parts).encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class _Match:
    start: int
    end: int
    pattern_class: str
    value: str


class DefaultScanner:
    """The registry's built-in content check (see the module docstring for what it finds)."""

    fingerprint: Final[str] = _fingerprint()

    def scan(self, path: str, data: bytes) -> list[Finding]:
        """Return the findings in `data`, ordinals 1..n in order of position."""
        text = windowed.decode_utf8(data)
        # An ASCII text's bytes are its probe (registry/domain/literals.py): no copy.
        probe = data if text.isascii() else None
        # Accepted matches are kept disjoint and sorted by start, so a candidate can only
        # overlap its two neighbours: a file full of keys costs O(n log n), not O(n^2).
        starts: list[int] = []
        accepted: list[_Match] = []
        for match in self._candidates(text, probe):
            index = bisect.bisect_right(starts, match.start)
            if index > 0 and accepted[index - 1].end > match.start:
                continue
            if index < len(starts) and starts[index] < match.end:
                continue
            starts.insert(index, match.start)
            accepted.insert(index, match)
        findings: list[Finding] = []
        line, counted = 1, 0
        for ordinal, match in enumerate(accepted, start=1):
            line += text.count("\n", counted, match.start)
            counted = match.start
            findings.append(
                Finding(path, match.pattern_class, ordinal, line, value_hash(match.value))
            )
        return findings

    @staticmethod
    def _candidates(text: str, probe: bytes | None) -> Iterable[_Match]:
        """Every accepted match, most specific rule first (the order overlaps resolve in)."""
        literals = _LITERALS.occurrences(text, probe)
        for rule in _RULES:
            for found in _rule_matches(rule, text, literals):
                value = found.group("value")
                if rule.accept(value):
                    start, end = found.span("value")
                    yield _Match(start, end, rule.pattern_class, value)
        for found in assignment_matches(text, literals):
            name = found.group("name")
            group = "quoted" if found.group("quoted") is not None else "bare"
            value = found.group(group)
            start, end = found.span(group)
            if _AWS_SECRET_NAME.search(name) and _AWS_SECRET_VALUE.fullmatch(value):
                if values.secret_value(value):
                    yield _Match(start, end, AWS_SECRET_ACCESS_KEY, value)
            elif values.is_secret_name(name) and values.generic_value(
                value, quoted=group == "quoted"
            ):
                yield _Match(start, end, GENERIC_SECRET, value)


# ---------------------------------------------------------------- using findings


def scan_package(scanner: Scanner, files: Mapping[str, PackageFile]) -> list[Finding]:
    """Scan every file of a package, in order of the UTF-8 bytes of the paths.

    The uncached reference: a service that skips digests already scanned clean under the
    same `scanner.fingerprint` must find exactly what this finds.
    """
    findings: list[Finding] = []
    for path in sorted(files, key=lambda p: p.encode("utf-8")):
        findings.extend(scanner.scan(path, files[path].data))
    return findings


def first_blocking(
    findings: Iterable[Finding], approved: Collection[str] = ()
) -> ContentBlocked | None:
    """Return the error for the first unapproved finding, in path then ordinal order.

    `approved` holds the `value_hash`es an owner has allowed; None if nothing blocks.
    """
    return blocking_error(
        sorted(
            (f for f in findings if f.value_hash not in approved),
            key=lambda f: (f.path.encode("utf-8"), f.ordinal),
        )
    )


def blocking_error(blocking: Sequence[Finding]) -> ContentBlocked | None:
    """The error for `blocking` findings (in path-then-ordinal order), or None if empty.

    It names the first and lists them all (path, class, ordinal, line; never a value), so
    an owner can approve every one of them in one write.
    """
    if not blocking:
        return None
    first = blocking[0]
    listed: list[dict[str, object]] = [
        {"path": f.path, "pattern_class": f.pattern_class, "ordinal": f.ordinal, "line": f.line}
        for f in blocking
    ]
    return ContentBlocked(first.path, first.pattern_class, first.ordinal, listed)


def raise_for(findings: Iterable[Finding], approved: Collection[str] = ()) -> None:
    """Raise `first_blocking(findings, approved)` if there is one."""
    error = first_blocking(findings, approved)
    if error is not None:
        raise error
