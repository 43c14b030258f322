"""Arguments of the library's calls, checked before any work: types, text, sequences.

A Python caller is outside the type checker's reach as often as inside it (JSON, plugins,
notebooks), and the HTTP layer's schemas do not guard it. A value the type hints forbid
used to fail late, after a write's blobs were uploaded (a `None` actor broke a NOT NULL
column inside the locked transaction, a lone surrogate the driver's UTF-8 encoding), fail
on one database only (PostgreSQL's text cannot hold NUL; SQLite stored it), or be taken
with another meaning (a bare `str` of sources became one source per character). These
checks refuse such a value with `ArgumentInvalid(argument, rule, detail)`, naming the
argument as the call spells it and never carrying the value. Each costs one pass over
the value at most, and nothing for the common plain-ASCII text but two C-level scans.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, TypeVar

from registry.errors import ArgumentInvalid

RULE_TYPE: Final = "wrong_type"
RULE_NUL: Final = "nul_byte"
RULE_INVALID_UNICODE: Final = "invalid_unicode"
RULE_RANGE: Final = "out_of_range"
RULE_MALFORMED: Final = "malformed"
"""A value of the right type that is not of its form (a page cursor no page gave)."""
RULE_CHOICE: Final = "not_a_choice"
"""A str that is none of the values the argument takes (a decision, a kind, a policy)."""
RULE_CONTROL: Final = "control_character"
r"""A C0 or C1 control character (a line break in one-line text; \n and \t are text)."""
RULE_BIDI: Final = "bidi_control"
"""A bidirectional embedding, override or isolate: it reorders what a reader sees."""

ARGUMENT_RULES: Final = (
    RULE_TYPE,
    RULE_NUL,
    RULE_INVALID_UNICODE,
    RULE_RANGE,
    RULE_MALFORMED,
    RULE_CHOICE,
    RULE_CONTROL,
    RULE_BIDI,
)
"""Every rule `ArgumentInvalid` names."""

# The characters no text a client sets may hold (docs/write-path.md, "Arguments"). One
# definition, spelled so that Python's `re`, pydantic's (Rust) regex engine and an
# ECMA-262 JSON Schema validator read it alike: the HTTP schemas and the wire models use
# the patterns below, the library `check_text`. C0 controls (NUL included) and DEL, the C1
# controls, and the bidi embeddings, overrides (U+202A-U+202E) and isolates
# (U+2066-U+2069): an escape sequence clears a terminal or plants a hyperlink, an override
# shows a reader text in another order than it is stored. Multi-line text (a message, a
# reason, an error) keeps \n and \t.
_BIDI: Final = r"\u202a-\u202e\u2066-\u2069"
_C1: Final = r"\x7f-\x9f"
LINE_CHARS: Final = rf"\x00-\x1f{_C1}{_BIDI}"
"""What one-line text (a name, an actor, a source, a path, a cursor) may not hold."""
TEXT_CHARS: Final = rf"\x00-\x08\x0b-\x1f{_C1}{_BIDI}"
"""What multi-line text (a message, a reason, an error) may not hold."""
LINE_PATTERN: Final = rf"^[^{LINE_CHARS}]*$"
TEXT_PATTERN: Final = rf"^[^{TEXT_CHARS}]*$"
_REFUSED_IN_LINE: Final = re.compile(f"[{LINE_CHARS}]")
_REFUSED_IN_TEXT: Final = re.compile(f"[{TEXT_CHARS}]")
_BIDI_CHARS: Final = re.compile(f"[{_BIDI}]")

T = TypeVar("T")
S = TypeVar("S", bound=str)

# Iterable, but one value rather than a sequence of them: `tuple("chat:42")` is seven
# sources, `tuple(b"ab")` two numbers, `tuple({"a": 1})` its keys.
_NOT_SEQUENCES: Final = (str, bytes, bytearray, memoryview, Mapping)


def type_name(value: object) -> str:
    """How an error names what it found: the type, never the value."""
    return "None" if value is None else type(value).__name__


def check_type(argument: str, value: object, kind: type[T], wanted: str) -> T:
    """`value` if it is a `kind`, else `ArgumentInvalid` saying what was `wanted`."""
    if not isinstance(value, kind):
        raise ArgumentInvalid(argument, RULE_TYPE, f"{wanted}, not {type_name(value)}")
    return value


def check_flag(argument: str, value: object) -> bool:
    """`value` if it is a bool: a truthy string (`"no"`) is no answer to a yes-or-no."""
    return check_type(argument, value, bool, "True or False")


def check_choice(argument: str, value: object, choices: Sequence[S]) -> S:
    """`value` if it is one of `choices` (str values), else `ArgumentInvalid`.

    The detail lists the choices, never the value: a misspelt decision is no secret, but
    the same rule holds for every argument.
    """
    text = check_type(argument, value, str, "a str")
    for choice in choices:
        if text == choice:
            return choice
    raise ArgumentInvalid(argument, RULE_CHOICE, f"one of {', '.join(choices)}")


def check_text(argument: str, value: object, *, multiline: bool = False) -> str:
    r"""`value` if it is a str a client may set: the one rule for text, everywhere.

    No NUL (PostgreSQL's `text` cannot hold it; SQLite would store it), no other control
    character or bidi control (`LINE_CHARS`; with `multiline`, `TEXT_CHARS`, which allow
    \n and \t), no lone surrogate (UTF-8, the databases' and the drivers', cannot encode
    it). The refusal names the argument, the rule and the character's code point and
    index, never the text.
    """
    text = check_type(argument, value, str, "a str")
    found = (_REFUSED_IN_TEXT if multiline else _REFUSED_IN_LINE).search(text)
    if found is not None:
        at, char = found.start(), found.group()
        rule = RULE_NUL if char == "\0" else RULE_BIDI if _BIDI_CHARS.match(char) else RULE_CONTROL
        raise ArgumentInvalid(argument, rule, f"U+{ord(char):04X} at index {at}")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(text[exc.start])
            detail = f"lone surrogate U+{code:04X} at index {exc.start}"
            raise ArgumentInvalid(argument, RULE_INVALID_UNICODE, detail) from None
    return text


def check_optional_text(argument: str, value: object, *, multiline: bool = False) -> str | None:
    """`check_text`, or None for None (an optional cursor, an error a record may lack)."""
    return None if value is None else check_text(argument, value, multiline=multiline)


def check_items(argument: str, value: object, wanted: str) -> tuple[object, ...]:
    """The items of `value` as a tuple, if it is a sequence and not one value (a str...).

    Any iterable of items is a sequence here (a list, a tuple, a generator); a str, a
    bytes-like or a mapping is not. A tuple is returned as it is, not copied.
    """
    if isinstance(value, _NOT_SEQUENCES) or not isinstance(value, Iterable):
        raise ArgumentInvalid(argument, RULE_TYPE, f"{wanted}, not {type_name(value)}")
    return tuple(value)


def check_texts(argument: str, value: object) -> tuple[str, ...]:
    """A sequence of texts (`check_text` each); an item is named `<argument>/<n>`, from 1."""
    items = check_items(argument, value, "a sequence of str")
    for n, item in enumerate(items, start=1):
        check_text(f"{argument}/{n}", item)
    return items  # type: ignore[return-value]  # every item was checked to be a str


def check_members(argument: str, value: object, kind: type[T], wanted: str) -> tuple[T, ...]:
    """A sequence of `kind`s; an item is named `<argument>/<n>`, from 1."""
    items = check_items(argument, value, f"a sequence of {wanted}")
    for n, item in enumerate(items, start=1):
        check_type(f"{argument}/{n}", item, kind, wanted)
    return items  # type: ignore[return-value]  # every item was checked to be a `kind`
