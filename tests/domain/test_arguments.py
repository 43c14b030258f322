"""The one rule for text a client sets: the library's check and the schemas' patterns agree."""

from __future__ import annotations

import re
from typing import Annotated

import pytest
from pydantic import Field, TypeAdapter, ValidationError

from registry.domain.arguments import LINE_PATTERN, TEXT_PATTERN, check_text
from registry.errors import ArgumentInvalid

# Every C0 and C1 control, the bidi controls and their neighbours, and some text around.
CODE_POINTS = [*range(0x250), *range(0x2000, 0x2070), 0xFEFF, 0x1F600]


def _refused_by_check(text: str, *, multiline: bool) -> str | None:
    try:
        check_text("x", text, multiline=multiline)
    except ArgumentInvalid as exc:
        return exc.rule
    return None


@pytest.mark.parametrize(("pattern", "multiline"), [(LINE_PATTERN, False), (TEXT_PATTERN, True)])
def test_the_library_and_the_schemas_refuse_the_same_characters(pattern, multiline):
    # The HTTP schemas and the wire models validate with pydantic's own regex engine; the
    # library with `check_text`. One definition feeds both: they must agree on every
    # character, or a client would get a 422 from one door and a stored row from another.
    schema = TypeAdapter(Annotated[str, Field(pattern=pattern)])
    for code in CODE_POINTS:
        text = f"a{chr(code)}b"
        by_check = _refused_by_check(text, multiline=multiline) is not None
        by_re = re.fullmatch(pattern, text) is None
        try:
            schema.validate_python(text)
            by_schema = False
        except ValidationError:
            by_schema = True
        assert by_check == by_re == by_schema, f"U+{code:04X}"


@pytest.mark.parametrize(
    ("text", "multiline", "rule"),
    [
        ("a\x00b", True, "nul_byte"),
        ("\x1b[2J", True, "control_character"),  # clears a terminal
        ("\x1b]8;;https://example.invalid\x07x\x1b]8;;\x07", True, "control_character"),
        ("\x9b2J", True, "control_character"),  # C1's CSI
        ("a\rb", True, "control_character"),
        ("a\nb", False, "control_character"),
        ("invoice\u202efdp.exe", True, "bidi_control"),
        ("\u2066x\u2069", False, "bidi_control"),
        ("two\nlines\tand a tab", True, None),
        ("λόγος \u200d 👩\u200d💻", False, None),  # a joiner is no control
    ],
)
def test_each_refusal_names_its_rule(text, multiline, rule):
    assert _refused_by_check(text, multiline=multiline) == rule
