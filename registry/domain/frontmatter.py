"""`SKILL.md`: parse and validate the Agent Skills frontmatter.

A `SKILL.md` is UTF-8 text that opens with a `---` line, holds a YAML mapping, closes it
with another `---` line and continues with a Markdown body. The YAML is read as the Agent
Skills reference validator reads it, by strictyaml: every value is text (`yes`, `1.0`,
`null` and `2024-01-01` are strings), and there are no tags, no flow style (`{...}`,
`[...]`), no anchors or aliases. Before strictyaml builds anything, one pass over the
parser's events (`_inspect`) refuses, each with its own rule and line, what strictyaml
refuses and what it would accept but this registry does not: aliases (a "billion laughs"
document cannot expand), merge keys (`<<`), duplicate keys, keys that are not text,
nesting over `MAX_YAML_DEPTH` (strictyaml builds recursively) and over `MAX_YAML_NODES`
nodes (its validation takes time quadratic in a collection's entries), all over a
frontmatter of bounded size. The mapping may hold only the fields the Agent Skills
specification defines; `name` must equal the skill's slug.

Every refusal is a `FrontmatterInvalid(rule, detail, line)` whose `rule` is one of the
`RULE_*` constants below and whose `line` (1-based, the opening `---` is line 1) points at
the problem when there is one place to point at. No detail quotes the file's content beyond
field names: a frontmatter may hold a value that must not end up in logs.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

import strictyaml
from strictyaml import ruamel
from strictyaml.ruamel import events

from registry.domain.model import check_slug
from registry.errors import FrontmatterInvalid, InvalidName

MAX_FRONTMATTER_BYTES: Final = 64 * 1024
"""The largest frontmatter (the text between the two `---` lines) that is parsed."""

MAX_YAML_DEPTH: Final = 16
"""How deeply YAML nodes may nest; the spec's fields need 3 (mapping, `metadata`, value)."""

MAX_YAML_NODES: Final = 128
"""How many YAML nodes (each key and each value is one) a frontmatter may hold: the spec's
six fields and 58 `metadata` entries. strictyaml's validation takes time quadratic in the
entries of one collection (docs/package-format.md), so their number is bounded before it
runs."""

MAX_DESCRIPTION_CHARS: Final = 1024
MAX_COMPATIBILITY_CHARS: Final = 500

RULE_NOT_UTF8: Final = "not_utf8"
RULE_NO_FRONTMATTER: Final = "no_frontmatter"
RULE_UNTERMINATED: Final = "unterminated_frontmatter"
RULE_TOO_LARGE: Final = "frontmatter_too_large"
RULE_INVALID_YAML: Final = "invalid_yaml"
RULE_YAML_ALIAS: Final = "yaml_alias"
RULE_YAML_DUPLICATE_KEY: Final = "yaml_duplicate_key"
RULE_YAML_MERGE_KEY: Final = "yaml_merge_key"
RULE_YAML_TOO_DEEP: Final = "yaml_too_deep"
RULE_YAML_TOO_MANY_NODES: Final = "yaml_too_many_nodes"
RULE_YAML_TAG: Final = "yaml_tag"
RULE_YAML_FLOW_STYLE: Final = "yaml_flow_style"
RULE_NOT_MAPPING: Final = "not_a_mapping"
RULE_UNKNOWN_FIELD: Final = "unknown_field"
RULE_MISSING_NAME: Final = "missing_name"
RULE_INVALID_NAME: Final = "invalid_name"
RULE_NAME_MISMATCH: Final = "name_mismatch"
RULE_MISSING_DESCRIPTION: Final = "missing_description"
RULE_INVALID_DESCRIPTION: Final = "invalid_description"
RULE_INVALID_LICENSE: Final = "invalid_license"
RULE_INVALID_COMPATIBILITY: Final = "invalid_compatibility"
RULE_INVALID_METADATA: Final = "invalid_metadata"
RULE_INVALID_ALLOWED_TOOLS: Final = "invalid_allowed_tools"
RULE_INVALID_TRIGGERS: Final = "invalid_triggers"
RULE_MISSING_SKILL_MD: Final = "missing_skill_md"
"""Raised by the package validator when the root holds no `SKILL.md` (exact case)."""

FIELDS: Final = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
"""The frontmatter fields the Agent Skills specification defines; no other key is accepted."""

TRIGGERS_KEY: Final = "triggers"
"""The `metadata` key that holds a skill's discovery triggers (docs/package-format.md)."""
MAX_TRIGGERS: Final = 10
MAX_TRIGGER_CHARS: Final = 512
TRIGGERS_FORM: Final = (
    "discovery triggers go under 'metadata' as one string, one phrase per line: "
    "'metadata:' then '  triggers: |' then one indented phrase per line"
)

_DELIMITER: Final = "---"

LOADED_CACHE_SIZE: Final = 256
"""How many frontmatters' parsed YAML are kept, most recently used first (`_load_cached`)."""
LOADED_CACHE_CHARS: Final = 16 * 1024
"""The longest frontmatter whose parsed YAML is kept: 256 of them hold at most 4 MiB of text."""


@dataclass(frozen=True, slots=True)
class Frontmatter:
    """A valid `SKILL.md`: its frontmatter fields and its Markdown body.

    Optional fields absent from the file (or given as YAML null) are `None`; `metadata` is
    then empty. `metadata` is a read-only mapping and takes no part in hashing. `name` is
    the NFKC form of the file's `name` (it equals the slug). `triggers` are the discovery
    phrases of `metadata.triggers`, in order (empty if there are none).
    """

    name: str
    description: str
    license: str | None
    compatibility: str | None
    metadata: Mapping[str, str] = field(hash=False)
    allowed_tools: str | None
    body: str
    triggers: tuple[str, ...] = ()


def parse_skill_md(data: bytes, slug: str) -> Frontmatter:
    """Parse and validate the bytes of a `SKILL.md` for the skill `slug`.

    Raises `InvalidName` if `slug` itself is not a valid slug, and `FrontmatterInvalid`
    for every problem with the file: not UTF-8, no opening or closing `---` line, a
    frontmatter over `MAX_FRONTMATTER_BYTES`, invalid or refused YAML (tags, flow style,
    anchors or aliases, duplicate or merge keys, nesting over `MAX_YAML_DEPTH`, more than
    `MAX_YAML_NODES` nodes), not a mapping, an unknown field, a missing or invalid `name`
    or `description`, a `name` other than `slug`, or an invalid optional field.
    """
    check_slug(slug)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FrontmatterInvalid(
            RULE_NOT_UTF8, f"invalid UTF-8 at byte offset {exc.start}", line
        ) from None
    source, body = _split(text)
    fields, lines = _load_cached(source) if len(source) <= LOADED_CACHE_CHARS else _load(source)
    return _validate(fields, lines, slug, body)


def _split(text: str) -> tuple[str, str]:
    """Split `text` into the YAML between the delimiter lines and the body after them."""
    if text.startswith("\ufeff"):
        raise FrontmatterInvalid(
            RULE_NO_FRONTMATTER, "the file starts with a byte-order mark, not '---'", 1
        )
    end = text.find("\n")
    if not _is_delimiter(text[: len(text) if end < 0 else end]):
        raise FrontmatterInvalid(RULE_NO_FRONTMATTER, "the first line must be '---'", 1)
    if end < 0:
        raise FrontmatterInvalid(RULE_UNTERMINATED, "no closing '---' line", 1)
    start = position = end + 1
    line = 2
    while True:
        # Characters never outnumber UTF-8 bytes, so this stops a huge unterminated
        # frontmatter before it is scanned to the end.
        if position - start > MAX_FRONTMATTER_BYTES:
            break
        end = text.find("\n", position)
        if _is_delimiter(text[position : len(text) if end < 0 else end]):
            source = text[start:position]
            if len(source.encode("utf-8")) > MAX_FRONTMATTER_BYTES:
                break
            return source, "" if end < 0 else text[end + 1 :]
        if end < 0:
            raise FrontmatterInvalid(RULE_UNTERMINATED, "no closing '---' line", line)
        position = end + 1
        line += 1
    raise FrontmatterInvalid(
        RULE_TOO_LARGE, f"the frontmatter exceeds {MAX_FRONTMATTER_BYTES} bytes", None
    )


def _is_delimiter(line: str) -> bool:
    return line.rstrip(" \t\r") == _DELIMITER


def _line_of(source: str, index: int) -> int:
    """Return the SKILL.md line of a position in the frontmatter (the opening `---` is 1)."""
    # Counted from the character index rather than taken from a mark's line, because YAML
    # also breaks lines at U+0085, U+2028 and U+2029, which Markdown editors do not.
    return source.count("\n", 0, index) + 2


# What YAML lets a document hold (YAML 1.2, "c-printable"), the set the parser's reader
# checks. Checked here first: strictyaml fails on the reader's refusal with an
# AttributeError (it reads marks that refusal lacks), and this one names the character and
# its line.
_NOT_PRINTABLE: Final = re.compile(
    "[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


@dataclass(slots=True)
class _Collection:
    """A mapping or a sequence the event pass is inside: its nodes so far, its keys."""

    mapping: bool
    nodes: int = 0
    keys: set[str] = field(default_factory=set)


def _inspect(source: str) -> dict[str, int]:
    """Refuse, in document order, what the frontmatter may not hold; return the key lines.

    One pass over the events of strictyaml's own parser (the vendored ruamel.yaml it
    builds with, so both read the same text the same way), which builds nothing and keeps
    a stack of the open collections, never recursion. The returned mapping gives the
    SKILL.md line of each top-level key.
    """
    bad = _NOT_PRINTABLE.search(source)
    if bad is not None:
        raise FrontmatterInvalid(
            RULE_INVALID_YAML,
            f"character U+{ord(bad.group()):04X} is not allowed in YAML",
            _line_of(source, bad.start()),
        )
    walk = _Walk(source)
    try:
        for event in ruamel.parse(source, Loader=ruamel.RoundTripLoader):
            walk.see(event)
    except FrontmatterInvalid:
        raise
    except ruamel.YAMLError as exc:
        raise _yaml_error(exc, source) from None
    except Exception as exc:  # noqa: BLE001 - see `_parser_failed`
        raise _parser_failed(exc) from None
    if walk.root != "a mapping":
        raise FrontmatterInvalid(
            RULE_NOT_MAPPING, f"the frontmatter is {walk.root}, not a mapping", 2
        )
    return walk.lines


class _Walk:
    """The event pass's state: the open collections, what the root is, the key lines."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: dict[str, int] = {}
        self.stack: list[_Collection] = []
        self.root = "empty"
        self.nodes = 0
        self.documents = 0

    def see(self, event: events.Event) -> None:
        if isinstance(event, events.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise self._refuse(
                    RULE_INVALID_YAML, "the frontmatter holds more than one YAML document", event
                )
        elif isinstance(event, events.CollectionEndEvent):
            self.stack.pop()
        elif isinstance(event, events.NodeEvent):
            self._node(event)

    def _refuse(self, rule: str, detail: str, event: events.Event) -> FrontmatterInvalid:
        return FrontmatterInvalid(rule, detail, _line_of(self.source, event.start_mark.index))

    def _node(self, event: events.NodeEvent) -> None:
        """The refusals of one node (a scalar, the start of a collection or an alias)."""
        self.nodes += 1
        mapping = isinstance(event, events.MappingStartEvent)
        collection = isinstance(event, events.CollectionStartEvent)
        if self.nodes == 1:
            self.root = "a mapping" if mapping else "a list" if collection else "text"
        self._markup(event)
        if len(self.stack) >= MAX_YAML_DEPTH:
            raise self._refuse(
                RULE_YAML_TOO_DEEP, f"the YAML nests deeper than {MAX_YAML_DEPTH} levels", event
            )
        if self.nodes > MAX_YAML_NODES:
            raise self._refuse(
                RULE_YAML_TOO_MANY_NODES,
                f"the YAML holds more than {MAX_YAML_NODES} keys and values",
                event,
            )
        parent = self.stack[-1] if self.stack else None
        if parent is not None:
            if parent.mapping and parent.nodes % 2 == 0:
                self._key(event, parent)
            parent.nodes += 1
        if collection:
            self.stack.append(_Collection(mapping=mapping))

    def _markup(self, event: events.NodeEvent) -> None:
        """Aliases, anchors, tags and flow style: YAML's ways to be more than text."""
        if isinstance(event, events.AliasEvent):
            raise self._refuse(RULE_YAML_ALIAS, "YAML aliases are not accepted", event)
        if event.anchor is not None:
            raise self._refuse(RULE_YAML_ALIAS, "YAML anchors are not accepted", event)
        if event.tag is not None:
            raise self._refuse(
                RULE_YAML_TAG, "YAML tags are not accepted: every value is text", event
            )
        if isinstance(event, events.CollectionStartEvent) and event.flow_style:
            raise self._refuse(
                RULE_YAML_FLOW_STYLE,
                "YAML flow style ('{...}', '[...]') is not accepted; write a block mapping or "
                "list, one entry a line, or quote the value to keep it as text",
                event,
            )

    def _key(self, event: events.NodeEvent, mapping: _Collection) -> None:
        """The refusals of a mapping's key: not text, a merge key, a key given twice."""
        if not isinstance(event, events.ScalarEvent):
            raise self._refuse(
                RULE_INVALID_YAML, "a key must be text, not a list or a mapping", event
            )
        key = event.value
        # Only a plain `<<` is a merge key (YAML 1.1's merge type); `'<<'` is text.
        if key == "<<" and event.style is None:
            raise self._refuse(
                RULE_YAML_MERGE_KEY, "YAML merge keys ('<<') are not accepted", event
            )
        if key in mapping.keys:
            raise self._refuse(RULE_YAML_DUPLICATE_KEY, f"the key {key!r} appears twice", event)
        mapping.keys.add(key)
        if len(self.stack) == 1:
            self.lines[key] = _line_of(self.source, event.start_mark.index)


def _yaml_error(
    exc: ruamel.YAMLError, source: str, *, at_context: bool = False
) -> FrontmatterInvalid:
    """A refusal for an error of the YAML parser: its problem and its line, no content.

    The parser's own words (context and problem) name what it expected; the snippet of
    the document it adds to its message is never used, since a value there may be one that
    must not reach a log. The line is the problem's, or with `at_context` the context's
    (strictyaml's own refusals give a node's start as their context and its end as their
    problem).
    """
    parts = (getattr(exc, "context", None), getattr(exc, "problem", None))
    detail = "; ".join(part for part in parts if isinstance(part, str) and part)
    marks = (getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None))
    mark = marks[1] or marks[0] if at_context else marks[0] or marks[1]
    index = getattr(mark, "index", None)
    line = _line_of(source, index) if isinstance(index, int) else None
    return FrontmatterInvalid(RULE_INVALID_YAML, detail or "invalid YAML", line)


def _parser_failed(exc: Exception) -> FrontmatterInvalid:
    """A refusal for a failure of the parser that is no YAML error.

    The vendored ruamel.yaml gives up on some documents with other exceptions (comments it
    cannot place raise `NotImplementedError`, an explicit key that is a list an
    `AssertionError`; tests/domain/test_frontmatter_yaml.py generates such documents). It
    read the text and could not make sense of it: that is the file's problem, never a
    server error.
    """
    return FrontmatterInvalid(
        RULE_INVALID_YAML, f"the YAML parser could not read it ({type(exc).__name__})", None
    )


@functools.lru_cache(maxsize=LOADED_CACHE_SIZE)
def _load_cached(source: str) -> tuple[object, dict[str, int]]:
    """`_load`, remembered: a package saved again mostly keeps its `SKILL.md`.

    Loading reads the text twice in Python (the event pass and strictyaml's load), so a
    frontmatter costs far more than checking its fields. Only what the YAML says is kept,
    keyed by its exact text; `_validate` checks it against the slug on every call, and
    only reads it (the `Frontmatter` it builds copies what it keeps). A refusal raises and
    is not remembered.
    """
    return _load(source)


def _load(source: str) -> tuple[object, dict[str, int]]:
    """Load the frontmatter YAML; return the value and the line of each top-level key.

    The value is strictyaml's: a mapping of text to text, mappings and lists, read once
    `_inspect` has refused what may not be read (a document that is no mapping included).
    """
    lines = _inspect(source)
    try:
        document = strictyaml.load(source)
    except strictyaml.YAMLError as exc:
        # What strictyaml still refuses after the event pass: a mapping whose block
        # mappings start at different indentations (it takes them for a mistake).
        raise _yaml_error(exc, source, at_context=True) from None
    except Exception as exc:  # noqa: BLE001 - see `_parser_failed`
        raise _parser_failed(exc) from None
    return _as_text(document.data), lines


def _as_text(value: object) -> object:
    """The value strictyaml read, with every scalar as `str`.

    strictyaml makes every scalar text but two that YAML 1.1 gives types it has no
    constructor for (`=`, the "value" type, and `<<` where it is a value, not a key): it
    hands those back as objects whose `str` is their text.
    """
    if isinstance(value, dict):
        return {str(key): _as_text(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_text(item) for item in value]
    return value if isinstance(value, str) else str(value)


def _kind(value: object) -> str:
    """How a detail names what YAML gave: `a list`, `a mapping`, `text`."""
    if isinstance(value, dict):
        return "a mapping"
    return "a list" if isinstance(value, list) else "text"


def _validate(fields: object, lines: Mapping[str, int], slug: str, body: str) -> Frontmatter:
    if not isinstance(fields, dict):
        raise FrontmatterInvalid(
            RULE_NOT_MAPPING, f"the frontmatter is {_kind(fields)}, not a mapping", 2
        )
    for key in fields:
        if key == TRIGGERS_KEY:
            raise FrontmatterInvalid(
                RULE_UNKNOWN_FIELD,
                f"'triggers' is not a top-level field of the Agent Skills specification; "
                f"{TRIGGERS_FORM}",
                lines.get(key),
            )
        if key not in FIELDS:
            raise FrontmatterInvalid(
                RULE_UNKNOWN_FIELD,
                f"unknown field {key!r}; the allowed fields are {', '.join(FIELDS)}",
                lines.get(key),
            )

    given = _text_field(fields, lines, "name", RULE_MISSING_NAME, RULE_INVALID_NAME)
    # As the specification's reference validator reads it: surrounding blanks dropped,
    # then NFKC, so `cafe\u0301-notes` names the skill `café-notes`.
    name = unicodedata.normalize("NFKC", given.strip())
    try:
        check_slug(name)
    except InvalidName as exc:
        raise FrontmatterInvalid(RULE_INVALID_NAME, exc.rule, lines.get("name")) from None
    if name != slug:
        raise FrontmatterInvalid(
            RULE_NAME_MISMATCH,
            f"name {name!r} differs from the skill's slug {slug!r}",
            lines.get("name"),
        )

    description = _text_field(
        fields, lines, "description", RULE_MISSING_DESCRIPTION, RULE_INVALID_DESCRIPTION
    )
    _check_length(
        description,
        high=MAX_DESCRIPTION_CHARS,
        lines=lines,
        key="description",
        rule=RULE_INVALID_DESCRIPTION,
    )

    compatibility = _optional_text(fields, lines, "compatibility", RULE_INVALID_COMPATIBILITY)
    if compatibility is not None:
        _check_length(
            compatibility,
            high=MAX_COMPATIBILITY_CHARS,
            lines=lines,
            key="compatibility",
            rule=RULE_INVALID_COMPATIBILITY,
        )

    metadata = _metadata(fields.get("metadata"), lines)
    return Frontmatter(
        name=name,
        description=description,
        license=_optional_text(fields, lines, "license", RULE_INVALID_LICENSE),
        compatibility=compatibility,
        metadata=metadata,
        allowed_tools=_optional_text(fields, lines, "allowed-tools", RULE_INVALID_ALLOWED_TOOLS),
        body=body,
        triggers=parse_triggers(metadata.get(TRIGGERS_KEY), lines.get("metadata")),
    )


def parse_triggers(value: str | None, line: int | None = None) -> tuple[str, ...]:
    """The phrases of a `metadata.triggers` string: one a line, blanks around them dropped.

    Blank lines are skipped. At most `MAX_TRIGGERS` phrases of at most
    `MAX_TRIGGER_CHARS` characters each, none repeated (compared case-insensitively), and at
    least one if the key is there (`invalid_triggers`).
    """
    if value is None:
        return ()
    phrases = [p.strip() for p in value.splitlines() if p.strip()]
    if not phrases:
        raise FrontmatterInvalid(RULE_INVALID_TRIGGERS, "'metadata.triggers' has no phrase", line)
    if len(phrases) > MAX_TRIGGERS:
        raise FrontmatterInvalid(
            RULE_INVALID_TRIGGERS,
            f"'metadata.triggers' has {len(phrases)} phrases, at most {MAX_TRIGGERS} allowed",
            line,
        )
    seen: set[str] = set()
    for number, phrase in enumerate(phrases, 1):
        if len(phrase) > MAX_TRIGGER_CHARS:
            raise FrontmatterInvalid(
                RULE_INVALID_TRIGGERS,
                f"trigger {number} has {len(phrase)} characters, at most "
                f"{MAX_TRIGGER_CHARS} allowed",
                line,
            )
        key = phrase.casefold()
        if key in seen:
            raise FrontmatterInvalid(
                RULE_INVALID_TRIGGERS, f"trigger {number} repeats an earlier one", line
            )
        seen.add(key)
    return tuple(phrases)


def _text_field(
    fields: Mapping[object, object], lines: Mapping[str, int], key: str, missing: str, invalid: str
) -> str:
    if key not in fields:
        raise FrontmatterInvalid(missing, f"the {key!r} field is required", None)
    value = fields[key]
    if not isinstance(value, str):
        raise FrontmatterInvalid(
            invalid, f"{key!r} must be text, not {_kind(value)}", lines.get(key)
        )
    return value


def _optional_text(
    fields: Mapping[object, object], lines: Mapping[str, int], key: str, invalid: str
) -> str | None:
    """An optional field's text; None if it is absent or empty (`license:`, `license: ''`)."""
    value = fields.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    raise FrontmatterInvalid(invalid, f"{key!r} must be text, not {_kind(value)}", lines.get(key))


def _check_length(value: str, *, high: int, lines: Mapping[str, int], key: str, rule: str) -> None:
    if not value.strip():
        raise FrontmatterInvalid(rule, f"{key!r} must not be blank", lines.get(key))
    if len(value) > high:
        raise FrontmatterInvalid(
            rule, f"{key!r} has {len(value)} characters, at most {high} allowed", lines.get(key)
        )


def _metadata(value: object, lines: Mapping[str, int]) -> Mapping[str, str]:
    if value is None or value == "":
        return MappingProxyType({})
    if not isinstance(value, dict):
        raise FrontmatterInvalid(
            RULE_INVALID_METADATA,
            f"'metadata' must be a mapping, not {_kind(value)}",
            lines.get("metadata"),
        )
    for key, item in value.items():
        if key == TRIGGERS_KEY and not isinstance(item, str):
            raise FrontmatterInvalid(
                RULE_INVALID_TRIGGERS,
                f"'metadata.triggers' is {_kind(item)}; {TRIGGERS_FORM}",
                lines.get("metadata"),
            )
        if not isinstance(item, str):
            raise FrontmatterInvalid(
                RULE_INVALID_METADATA,
                f"'metadata' maps text to text; the entry {key!r} holds {_kind(item)}",
                lines.get("metadata"),
            )
    return MappingProxyType(dict(value))
