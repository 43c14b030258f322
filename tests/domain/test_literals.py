"""Every literal's occurrences, listed in one pass or searched for, answer the same.

`Occurrences.next_at(literal, position)` must give the literal's first occurrence at or
after `position` (overlapping occurrences included, folded literals in any ASCII case,
never inside a character beyond ASCII), whether RE2 listed them or each question is a
`find`, and whatever the window. A text crowded with literals is searched.
The content check built on them finds the same with every engine.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from unittest import mock

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from registry.domain import literals, scanner, windowed
from registry.domain.literals import SPARSE, Listed, Literals, Searched
from registry.domain.scanner import DefaultScanner
from tests.corpus import fakes

CASED = ("sk-", "sk-ant-", "eyJ", "AKIA", "k_live_", "-----BEGIN ")
FOLDED = ("key", "pass", "auth", "token")
ENGINES = pytest.mark.parametrize("engine", literals.ENGINES)
WINDOWS = st.integers(min_value=1, max_value=24)

_PIECES = st.sampled_from(
    [
        *CASED,
        *FOLDED,
        *(word.upper() for word in FOLDED),
        "KeY",
        "PaSs",
        "SK-",
        "eyj",
        "sk",
        "-",
        "k",
        "eyJ",
        "y",
        "J",
        "-----",
        "BEGIN ",
        "a",
        " ",
        "\n",
        "é",
        "İ",
        "\u212a",  # KELVIN SIGN: folds to k in Unicode, never in ASCII
        "?",
    ]
)
_TEXTS = st.lists(_PIECES, max_size=40).map("".join)


def _expected(text: str) -> dict[str, list[int]]:
    """Every start of every literal, one `str.find` at a time (folded: in ASCII case)."""
    lowered = "".join(c.lower() if c.isascii() else "\0" for c in text)
    found: dict[str, list[int]] = {}
    for literal, haystack in [*((c, text) for c in CASED), *((f, lowered) for f in FOLDED)]:
        at = haystack.find(literal)
        while at != -1:
            found.setdefault(literal, []).append(at)
            at = haystack.find(literal, at + 1)
    return found


def _occurrences(engine: str, text: str):
    # Listing is tried at any density here (the density rule has its own test).
    with mock.patch.object(literals, "SPARSE", 1):
        return Literals(CASED, FOLDED, engine=engine).occurrences(text)


@ENGINES
@given(text=_TEXTS, window=WINDOWS)
@example(text="keyJ", window=1)  # `key` at 0 and `eyJ` at 1: overlapping literals
@example(text="sk-ant-", window=3)  # two literals at one position
@example(text="\u212aey KEY", window=2)
def test_every_occurrence_of_every_literal(engine, text, window):
    expected = _expected(text)
    with mock.patch.object(windowed, "WINDOW", window):
        found = _occurrences(engine, text)
        assert isinstance(found, Searched if engine == "search" else Listed)
        for literal in (*CASED, *FOLDED):
            positions = expected.get(literal, [])
            for position in range(len(text) + 2):
                following = [at for at in positions if at >= position]
                assert found.next_at(literal, position) == (following[0] if following else -1)


@ENGINES
def test_a_text_crowded_with_literals_is_searched_not_listed(engine):
    finder = Literals(CASED, FOLDED, engine=engine)
    sparse = ("a word " * 50 + "a key. ") * 20  # one key in 357 characters
    assert isinstance(finder.occurrences(sparse), Searched if engine == "search" else Listed)
    # One occurrence every 4 characters: listing them would cost more than searching.
    crowded = "keyJ" * (SPARSE * 8)
    found = finder.occurrences(crowded)
    assert isinstance(found, Searched)
    assert (found.next_at("key", 1), found.next_at("eyJ", 0)) == (4, 1)


@ENGINES
def test_folded_literals_are_asked_for_in_lower_case(engine):
    assert _occurrences_of(("Key",), "a KEY", engine).next_at("key", 0) == 2


def _occurrences_of(folded, text, engine):
    with mock.patch.object(literals, "SPARSE", 1):
        return Literals((), folded, engine=engine).occurrences(text)


@pytest.mark.parametrize(
    ("cased", "folded"),
    [(("",), ()), (("sk-?",), ()), (("clé",), ()), (("key",), ("KEY",))],
    ids=["empty", "replacement character", "beyond ASCII", "both cased and folded"],
)
def test_literals_the_probe_could_not_hold_are_refused(cased, folded):
    with pytest.raises(ValueError, match="literal"):
        Literals(cased, folded, engine="search")


def test_re2_lists_by_default():
    # google-re2 is a dependency, not an extra: every install lists with it.
    assert literals.ENGINES == ("re2", "search")
    assert Literals(CASED, FOLDED).engine == literals.ENGINE == "re2"
    assert isinstance(Literals(CASED, FOLDED).occurrences("a key"), Listed)


def test_an_engine_that_is_not_installed_is_refused():
    with (
        mock.patch.object(literals, "ENGINES", ("search",)),
        pytest.raises(RuntimeError, match="'re2' engine is not installed"),
    ):
        Literals(CASED, FOLDED, engine="re2")


def test_an_ascii_texts_own_bytes_are_its_probe():
    text = "a key, a TOKEN and sk-ant- once"
    given = Literals(CASED, FOLDED).occurrences(text, text.encode("ascii"))
    made = Literals(CASED, FOLDED).occurrences(text)
    assert isinstance(given, Listed)
    assert given.found == made.found


_SCAN_PIECES = st.sampled_from(
    [
        *fakes.ALL.values(),
        *(value[:9] for value in fakes.ALL.values()),
        "password = ",
        "API_KEY: ",
        "--token=",
        '"',
        "keyJ",
        "sk_live_",
        "é",
        " ",
        "\n",
        "Zx8vQ2mN7pL4kR1tY6wE3aB",
    ]
)


@ENGINES
@given(text=st.lists(_SCAN_PIECES, max_size=30).map("".join), window=WINDOWS)
def test_the_content_check_finds_the_same_with_every_engine(engine, text, window):
    data = text.encode()
    with mock.patch.object(windowed, "WINDOW", window):
        with mock.patch.object(literals, "SPARSE", 1):
            listed = DefaultScanner().scan("f", data)
        mine = scanner._LITERALS
        other = Literals(mine.cased, mine.folded, engine=engine)
        with mock.patch.object(scanner, "_LITERALS", other):
            assert DefaultScanner().scan("f", data) == listed


# One token per way each rule's pattern can open: every one must hold a literal of its rule
# at the rule's offset, or the listing would never try the pattern there.
_EVERY_OPENING = [
    "-----BEGIN RSA PRIVATE KEY-----\n" + "MIIEow" * 10 + "\n-----END RSA PRIVATE KEY-----",
    *(f"A{c}IA" + "Q7Z3K9W2M5N8P4R6" for c in "KS"),
    *(f"gh{c}_" + "a1B2c3D4e5F6g7H8i9J0" * 2 for c in "pousr"),
    "github_pat_" + "a1B2c3D4e5F6g7H8i9J0_k" * 3,
    *(f"xox{c}-1234567890-abcdefGHIJ" for c in "abprs"),
    *(f"{c}k_live_" + "a1B2c3D4e5F6g7H8i9J0" for c in "sr"),
    "AIza" + "a1B2c3D4e5F6g7H8i9J0a1B2c3D4e5F6g7H",
    "sk-ant-" + "a1B2c3D4e5F6g7H8i9J0" * 2,
    "sk-" + "a1B2c3D4e5F6g7H8i9J0" * 2,
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlX29mX3RoZV90b2tlbg",
]


@pytest.mark.parametrize("token", _EVERY_OPENING)
def test_every_way_a_rule_opens_holds_one_of_its_literals(token):
    text = f"value: {token} end"
    matched = False
    for rule in scanner._RULES:
        for match in rule.pattern.finditer(text):
            matched = True
            at = match.start() + rule.offset
            assert any(text.startswith(literal, at) for literal in rule.literals), rule
    assert matched, token


@ENGINES
def test_threads_list_at_once_and_each_finds_the_same(engine):
    """Worker threads scan packages at once, sharing one compiled set of literals."""
    finder = Literals(CASED, FOLDED, engine=engine)
    texts = [f"{'a word ' * 40 * n}a key, sk-ant- and {'TOKEN ' * n}" * 50 for n in range(1, 9)]
    expected = [_found(finder.occurrences(text)) for text in texts]
    start = threading.Barrier(len(texts))

    def scan(text: str) -> dict[str, list[int]] | None:
        start.wait(timeout=30)
        return _found(finder.occurrences(text))

    with ThreadPoolExecutor(max_workers=len(texts)) as pool:
        for _ in range(5):
            assert list(pool.map(scan, texts)) == expected


def _found(occurrences):
    return occurrences.found if isinstance(occurrences, Listed) else None
