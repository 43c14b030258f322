"""Numbers read from text are ASCII digits within their bound, checked before `int()`."""

from __future__ import annotations

import pytest

from registry.domain.numbers import MAX_ID, MAX_VERSION, decimal


@pytest.mark.parametrize(
    ("text", "maximum", "value"),
    [
        ("1", MAX_VERSION, 1),
        ("0", MAX_VERSION, 0),
        (str(MAX_VERSION), MAX_VERSION, MAX_VERSION),
        (str(MAX_VERSION + 1), MAX_VERSION, None),
        (str(MAX_ID), MAX_ID, MAX_ID),
        ("9" * 5000, MAX_ID, None),  # int() itself refuses more than 4300 digits
        ("\u00b2", MAX_VERSION, None),  # isdigit() is True, int() raises
        ("\u0663", MAX_VERSION, None),  # Arabic-Indic three: int() would read 3
        ("", MAX_VERSION, None),
        ("-1", MAX_VERSION, None),
        ("+1", MAX_VERSION, None),
        (" 1", MAX_VERSION, None),
        ("1_000", MAX_VERSION, None),
        ("00000000001", MAX_VERSION, None),  # more digits than the bound has
    ],
)
def test_decimal(text, maximum, value):
    assert decimal(text, maximum) == value
