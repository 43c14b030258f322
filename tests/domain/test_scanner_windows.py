"""The assignment pass tries only the positions before secret words, and finds the same.

`assignment_matches` must return exactly what `finditer` over the whole text
returns, match by match, for any text: hostile mixes of secret words, names, operators,
quotes, flags and line breaks, in ASCII and beyond.
"""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registry.domain import literals, scanner, windowed
from registry.domain.scanner import DefaultScanner, assignment_matches

_PIECES = st.sampled_from(
    [
        "pass",
        "PASSWORD",
        "pwd",
        "Secret",
        "TOKEN",
        "auth",
        "credential",
        "api_key",
        "Key",
        "db_",
        "x",
        "_",
        ".",
        "-",
        "--",
        "$",
        " ",
        "\t",
        "\n",
        "=",
        ":",
        ":=",
        "=>",
        '"',
        "'",
        "`",
        "]",
        "[",
        ",",
        ";",
        ")",
        "é",
        "İ",
        "K",
        "s3cr3tV4lu3xYz9Qw",
        "Zx8vQ2mN7pL4kR1tY6wE3",
        "a" * 70,
        "b" * 600,
    ]
)
_TEXTS = st.lists(_PIECES, max_size=80).map("".join)


def _spans(matches):
    return [(m.span(), m.groupdict()) for m in matches]


@given(_TEXTS)
def test_windows_find_what_the_whole_text_finds(text):
    assert _spans(assignment_matches(text)) == _spans(scanner._ASSIGNMENT.finditer(text))


@given(st.text(max_size=300))
def test_windows_on_arbitrary_text(text):
    assert _spans(assignment_matches(text)) == _spans(scanner._ASSIGNMENT.finditer(text))


@given(
    st.text(
        alphabet=st.sampled_from(
            list("passPwdKEYtokenauth=:\"' \n-_.$\u00e9\u20ac\u0130\u212a\U0001d49c")
        ),
        max_size=200,
    )
)
def test_windows_on_text_beyond_ascii(text):
    # Case folding and positions outside ASCII: the Kelvin sign is not a "k" here.
    assert _spans(assignment_matches(text)) == _spans(scanner._ASSIGNMENT.finditer(text))


def test_a_long_text_with_a_secret_far_from_the_start():
    filler = "the report lists each value of the table.\n" * 5000
    secret = 'password = "Zx8vQ2mN7pL4kR1tY6wE3aB"\n'
    text = filler + secret + filler
    assert _spans(assignment_matches(text)) == _spans(scanner._ASSIGNMENT.finditer(text))
    findings = DefaultScanner().scan("notes.md", text.encode())
    assert [f.line for f in findings] == [5001]


def test_text_without_secret_words_is_not_searched():
    assert scanner._assignment_starts("the report lists each value.\n" * 100) == []


@pytest.mark.parametrize(
    "text",
    [
        "run --password=Zx8vQ2mN7pL4kR1tY6wE3aB now",
        "x" * 100 + "_password = 'Zx8vQ2mN7pL4kR1tY6wE3aB'",
        "a" * 40 + "_api_key: Zx8vQ2mN7pL4kR1tY6wE3aB",
        "$password=Zx8vQ2mN7pL4kR1tY6wE3aB password=Zx8vQ2mN7pL4kR1tY6wE3aB",
        "password=Zx8vQ2mN7pL4kR1tY6wE3aBtoken=Qw9eRt8yUi7oPa6sDf5gHj4",
    ],
)
def test_name_runs_long_short_and_flagged(text):
    assert _spans(assignment_matches(text)) == _spans(scanner._ASSIGNMENT.finditer(text))


# Names and operators at the assignment pattern's bounds (blanks before the operator, the
# length of a name, quotes and brackets around it, flags), at and one past each limit.
_VALUE = "Zx8vQ2mN7pL4kR1tY6wE3aB"
_NAME_EDGES = [
    *(f"key{blanks}= {_VALUE}" for blanks in (" " * 8, " " * 9, "\t" * 8, " \t" * 5)),
    *(f"{'x' * n}key={_VALUE}" for n in (60, 61, 62)),
    *(f"key{'x' * n}={_VALUE}" for n in (60, 61, 62)),
    *(f"--{'k' * n}token={_VALUE}" for n in (58, 59, 60)),
    f'settings["api_key"]  :  "{_VALUE}"',
    f'"credential{"x" * 54}"]{" " * 8}= {_VALUE}',  # the longest a name's match runs
    f"settings['api_key'] => '{_VALUE}'",
    f"`auth`] := {_VALUE}",
    f'"Password"{" " * 8}:"{_VALUE}"',
    f"$password={_VALUE} x.password={_VALUE}",
    f"é-credential={_VALUE} İkey={_VALUE}",
    f"keykeykey=key:key={_VALUE}",
    f"pass\n= {_VALUE} pass =\n{_VALUE}",
]


@pytest.mark.parametrize("text", _NAME_EDGES)
@pytest.mark.parametrize("window", [1, 5, 83, 84, 85, 200])
def test_every_start_is_kept_at_the_names_bounds(text, window):
    with mock.patch.object(windowed, "WINDOW", window):
        found = scanner._LITERALS.occurrences(text)
        assert _spans(assignment_matches(text, found)) == _spans(scanner._ASSIGNMENT.finditer(text))


def test_a_text_crowded_with_assignments_is_searched_and_finds_the_same():
    text = f"key={_VALUE}\n" * 2000
    found = scanner._LITERALS.occurrences(text)
    assert isinstance(found, literals.Searched)
    assert _spans(assignment_matches(text, found)) == _spans(scanner._ASSIGNMENT.finditer(text))
