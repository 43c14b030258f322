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

ARGUMENT_RULES: Final = (
    RULE_TYPE,
    RULE_NUL,
    RULE_INVALID_UNICODE,
    RULE_RANGE,
    RULE_MALFORMED,
    RULE_CHOICE,
)
"""Every rule `ArgumentInvalid` names."""

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


def check_text(argument: str, value: object) -> str:
    """`value` if it is a str every database stores as given: no NUL, no lone surrogate.

    PostgreSQL's `text` cannot hold NUL, and UTF-8 (the databases', the drivers') cannot
    encode a lone surrogate; the HTTP layer's schemas refuse NUL too.
    """
    text = check_type(argument, value, str, "a str")
    at = text.find("\0")
    if at >= 0:
        raise ArgumentInvalid(argument, RULE_NUL, f"NUL at index {at}")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(text[exc.start])
            detail = f"lone surrogate U+{code:04X} at index {exc.start}"
            raise ArgumentInvalid(argument, RULE_INVALID_UNICODE, detail) from None
    return text


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
