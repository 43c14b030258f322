"""The assignment pass tries only the positions before secret words, and finds the same.

`assignment_matches` must return exactly what `finditer` over the whole text
returns, match by match, for any text: hostile mixes of secret words, names, operators,
quotes, flags and line breaks, in ASCII and beyond.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registry.domain import scanner
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
