"""The scanner works in bounded steps and finds exactly what whole-text searches find.

Every search, find and decode covers one window (`registry/domain/windowed.py`); with a
window of a few characters, every boundary case shows up in short hypothesis texts. The
token patterns are tried only where their `start` is found: that must give what `finditer`
gives, match by match. The files crafted against each pattern scan without a finding, and
the input that made the old private-key pattern backtrack exponentially costs nothing.
"""

from __future__ import annotations

import re
import re._parser
from unittest import mock

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from registry.domain import literals, scanner, values, windowed
from registry.domain.scanner import DefaultScanner
from tests.corpus import adversarial, fakes
from tests.corpus.adversarial import BEGIN, DASHES, LONG_VALUES, NEAR_MISSES, PEM_LINE

SCANNER = DefaultScanner()
WINDOWS = st.integers(min_value=1, max_value=24)
RULES = {rule.pattern_class: rule for rule in scanner._RULES}


def small_window(size):
    return mock.patch.object(windowed, "WINDOW", size)


def spans(matches):
    return [(m.span(), m.groupdict()) for m in matches]


# ---------------------------------------------------------------- windowed primitives


@given(st.binary(max_size=200), WINDOWS)
def test_decoding_a_window_at_a_time_is_the_one_shot_decode(data, window):
    with small_window(window):
        assert windowed.decode_utf8(data) == data.decode("utf-8", errors="replace")


@given(
    st.text(alphabet="ab\n\x00\x7f", max_size=200).map(str.encode),
    WINDOWS,
    st.integers(min_value=0, max_value=200),
)
def test_ascii_data_is_decoded_at_once_up_to_its_limit_and_by_windows_above(data, window, at_once):
    with small_window(window), mock.patch.object(windowed, "ASCII_AT_ONCE", at_once):
        assert windowed.decode_utf8(data) == data.decode("utf-8", errors="replace")


@given(
    st.text(alphabet="abcé€", max_size=120),
    st.text(alphabet="abcé€", min_size=1, max_size=4),
    st.integers(min_value=0, max_value=130),
    WINDOWS,
)
def test_find_a_window_at_a_time(haystack, needle, start, window):
    with small_window(window):
        assert windowed.find(haystack, needle, start) == haystack.find(needle, start)
        encoded, word = haystack.encode(), needle.encode()
        assert windowed.find(encoded, word, start) == encoded.find(word, start)


_BOUNDED = [re.compile(p) for p in (r"ab", r"(?<!a)b[ab]{0,3}c", r"[^ab]", r"a(?!bc)", r"b?")]


@given(
    st.sampled_from(_BOUNDED),
    st.text(alphabet="abcx", max_size=120),
    st.integers(min_value=0, max_value=130),
    WINDOWS,
)
def test_search_a_window_at_a_time(pattern, text, start, window):
    reach = re._parser.parse(pattern.pattern).getwidth()[1] + 3  # the lookahead reads 3
    with small_window(window):
        found = windowed.search(pattern, text, start, reach)
        expected = pattern.search(text, start)
    assert (found and found.span()) == (expected and expected.span())


# ---------------------------------------------------------------- rules


def test_every_start_reads_no_further_than_the_reach():
    for rule in scanner._RULES:
        assert re._parser.parse(rule.start.pattern, re.ASCII).getwidth()[1] <= (
            scanner._START_REACH
        )


def test_every_match_opens_with_its_rule_start():
    texts = [f"{name} {value}" for name, value in fakes.ALL.items()]
    for rule in scanner._RULES:
        for text in texts:
            for found in rule.pattern.finditer(text):
                assert rule.start.match(text, found.start()), (rule.pattern_class, text)


# Pieces that make every part of every token pattern succeed, fail and straddle.
_TOKEN_PIECES = st.sampled_from(
    [
        *(f"{fakes.ALL[name][:n]}" for name in fakes.ALL for n in (3, 8, 30)),
        *(fakes.ALL[name] for name in fakes.ALL),
        "sk-",
        "ant-",
        "eyJ",
        "AKIA",
        "ASIA",
        "AIza",
        "gh",
        "p_",
        "ithub_pat_",
        "xox",
        "b-",
        "k_live_",
        "s",
        "r",
        BEGIN,
        "PRIVATE KEY",
        DASHES,
        "\nProc-Type: 4",
        "\n",
        " ",
        ".",
        "-",
        "_",
        ":",
        "=",
        "A" * 20,
        "a1B2c3D4e5F6g7H8" * 3,
        "é",
    ]
)
_TOKEN_TEXTS = st.lists(_TOKEN_PIECES, max_size=40).map("".join)


def _occurrences(how, text):
    """The text's literals, listed in one pass or searched for (registry/domain/literals.py)."""
    if how == "listed":
        with mock.patch.object(literals, "SPARSE", 1):
            found = scanner._LITERALS.occurrences(text)
        assert isinstance(found, literals.Listed)
        return found
    cased, folded = scanner._LITERALS.cased, scanner._LITERALS.folded
    return literals.Literals(cased, folded, engine="search").occurrences(text)


@pytest.mark.parametrize("how", ["listed", "searched"])
@pytest.mark.parametrize("pattern_class", sorted(RULES))
@given(text=_TOKEN_TEXTS, window=WINDOWS)
def test_rule_matches_are_what_finditer_finds(pattern_class, how, text, window):
    rule = RULES[pattern_class]
    with small_window(window):
        found = spans(scanner._rule_matches(rule, text, _occurrences(how, text)))
    assert found == spans(rule.pattern.finditer(text))


@given(text=_TOKEN_TEXTS, window=WINDOWS)
def test_a_scan_finds_the_same_whatever_the_window(text, window):
    data = text.encode()
    expected = SCANNER.scan("f", data)
    with small_window(window):
        assert SCANNER.scan("f", data) == expected


_ASSIGNMENT_PIECES = st.sampled_from(
    [
        *("pass", "Token", "api_key", "KEY", "x", "_", "-", "--", "$", " ", "\n", "=", ":"),
        *('"', "'", "é", "s3cr3tV4lu3xYz9Qw", "a" * 70),
    ]
)


@pytest.mark.parametrize("how", ["listed", "searched"])
@given(text=st.lists(_ASSIGNMENT_PIECES, max_size=60).map("".join), window=WINDOWS)
def test_assignment_starts_a_window_at_a_time(how, text, window):
    with small_window(window):
        found = spans(scanner.assignment_matches(text, _occurrences(how, text)))
    assert found == spans(scanner._ASSIGNMENT.finditer(text))


@pytest.mark.parametrize(
    "text",
    [
        # A word deep in a long run gives no start; the search goes on after the run.
        "a" * 70 + "key key=s3cr3tV4lu3xYz9Qw",
        "a" * 70 + "key\npassword: s3cr3tV4lu3xYz9Qw",
        "x" * 200 + "_token_" + "y" * 100 + ".auth=s3cr3tV4lu3xYz9Qw --secret=Zx8vQ2mN7",
        "--" + "k" * 80 + "key --key=s3cr3tV4lu3xYz9Qw",
    ],
)
@pytest.mark.parametrize("window", [1, 3, 70, windowed.WINDOW])
def test_long_runs_are_skipped_to_their_end(text, window):
    with small_window(window):
        found = spans(scanner.assignment_matches(text))
    assert found == spans(scanner._ASSIGNMENT.finditer(text))
    assert found


def test_entropy_counted_a_window_at_a_time():
    value = fakes.chars(fakes.ALNUM, 500, "entropy")
    whole = values.entropy(value)
    with mock.patch.object(values, "WINDOW", 7):
        assert values.entropy(value) == whole


# ---------------------------------------------------------------- the patterns that changed

# The private-key pattern before header lines were taken whole: a body could start anywhere
# inside a header's value, and a failed try cost every split of trailing spaces.
_OLD_PRIVATE_KEY = re.compile(
    r"(?P<value>-----BEGIN [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[ \t]*\r?\n[A-Za-z0-9-]{1,40}:[^\r\n]*){0,8}"
    r"\s{0,8}[A-Za-z0-9+/]{40}[A-Za-z0-9+/=\s]*"
    r"(?:-----END [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----)?)",
    re.ASCII,
)
_OLD_JWT = re.compile(
    r"(?P<value>eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}"
    r"\.[A-Za-z0-9_-]{16,})(?![A-Za-z0-9_.-])",
    re.ASCII,
)

_HEADER = st.builds(
    "{}: {}{}".format,
    st.sampled_from(["Proc-Type", "DEK-Info", "Comment", "Version", "A"]),
    st.text(alphabet="4,ENCRYPTEDaes-128+/=", max_size=30),
    st.sampled_from(["", " ", "\t"]),
)
_BODY_LINE = st.builds(
    lambda n, tail: fakes.chars(fakes.BASE64, n, str(n)) + tail,
    st.integers(min_value=0, max_value=70),
    st.sampled_from(["", "=", "==", " ", "!"]),
)
_PEM_TEXTS = st.builds(
    lambda before, begin, headers, gap, body, end, after: "".join(
        [before, begin, *(f"\n{h}" for h in headers), gap, "\n".join(body), end, after]
    ),
    st.sampled_from(["", "x ", "key:\n"]),
    st.sampled_from([PEM_LINE, f"{BEGIN}RSA PRIVATE KEY{DASHES}", f"{BEGIN}PRIVATE KEY"]),
    st.lists(_HEADER, max_size=9),
    st.sampled_from(["\n", "\n\n", "\r\n", "\n  \n"]),
    st.lists(_BODY_LINE, max_size=4),
    st.sampled_from(["", f"\n{DASHES}END PRIVATE KEY{DASHES}", f"\n{DASHES}END RSA"]),
    st.sampled_from(["", "\n", "\ntrailing text"]),
)


@given(_PEM_TEXTS)
@example(f"{PEM_LINE} {fakes.chars(fakes.BASE64, 64, 'one line')}")
def test_private_keys_are_found_as_before_when_no_body_hides_in_a_header(text):
    # Header values here hold fewer than 40 base64 characters and the body starts on a line
    # of its own, so it can only follow the headers, where both patterns look for it.
    new = RULES["private_key"].pattern
    assert spans(new.finditer(text)) == spans(_OLD_PRIVATE_KEY.finditer(text))


_HIDING_HEADER = st.builds(
    "{}: {}{}".format,
    st.sampled_from(["Comment", "A"]),
    st.builds(lambda n: fakes.chars(fakes.BASE64, n, f"hidden {n}"), st.integers(0, 60)),
    st.sampled_from(["", " ", "!"]),
)
_ANY_PEM_TEXTS = st.builds(
    lambda begin, headers, gap, body: "".join([begin, *(f"\n{h}" for h in headers), gap, body]),
    st.sampled_from([PEM_LINE, f"{BEGIN}RSA PRIVATE KEY{DASHES}"]),
    st.lists(st.one_of(_HEADER, _HIDING_HEADER), max_size=9),
    st.sampled_from(["\n", " ", "", "\n\n"]),
    _BODY_LINE,
)


@given(_ANY_PEM_TEXTS)
def test_a_private_key_is_found_only_where_the_old_pattern_found_one(text):
    # So a file the old rules found clean is clean under the new ones: the fingerprint
    # changed, but no verdict cached under the old one was wrong for the new one.
    new, old = RULES["private_key"].pattern, _OLD_PRIVATE_KEY
    for position in range(len(text)):
        if new.match(text, position):
            assert old.match(text, position)


def test_a_body_inside_a_header_value_is_no_longer_a_key():
    text = f"{PEM_LINE}\nComment: {fakes.chars(fakes.BASE64, 48, 'hidden')}\n"
    assert _OLD_PRIVATE_KEY.search(text)
    assert not RULES["private_key"].pattern.search(text)


@given(_TOKEN_TEXTS)
def test_jwts_are_found_as_before(text):
    assert spans(RULES["jwt"].pattern.finditer(text)) == spans(_OLD_JWT.finditer(text))


# ---------------------------------------------------------------- crafted files


@pytest.mark.parametrize("case", NEAR_MISSES, ids=lambda case: case.id)
def test_a_crafted_file_scans_to_nothing(case):
    data = case.make()
    assert len(data) == adversarial.FILE_BYTES
    assert SCANNER.scan("crafted", data) == []


@pytest.mark.parametrize("case", LONG_VALUES, ids=lambda case: case.id)
def test_a_value_as_long_as_its_file_is_one_finding(case):
    findings = SCANNER.scan("crafted", case.make())
    assert [f.pattern_class for f in findings] == [case.pattern]


def test_header_lines_ending_in_spaces_cost_nothing():
    # The old pattern tried (41 ** 8) splits of these spaces before giving up on one block.
    text = (PEM_LINE + ("\nA:" + " " * 40) * 8 + "\n!\n") * 1000
    assert SCANNER.scan("spaces", text.encode()) == []
