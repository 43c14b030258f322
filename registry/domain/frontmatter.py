"""`SKILL.md`: parse and validate the Agent Skills frontmatter.

A `SKILL.md` is UTF-8 text that opens with a `---` line, holds a YAML mapping, closes it
with another `---` line and continues with a Markdown body. The YAML is read by a loader
that refuses anchors and aliases (so a "billion laughs" document cannot expand), duplicate
keys (which most loaders resolve silently, each differently), merge keys and deep nesting,
over a frontmatter of bounded size. The mapping may hold only the fields the Agent Skills
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
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Protocol

import yaml

from registry.domain.model import check_slug
from registry.errors import FrontmatterInvalid, InvalidName

MAX_FRONTMATTER_BYTES: Final = 64 * 1024
"""The largest frontmatter (the text between the two `---` lines) that is parsed."""

MAX_YAML_DEPTH: Final = 16
"""How deeply YAML nodes may nest; the spec's fields need 3 (mapping, `metadata`, value)."""

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
    frontmatter over `MAX_FRONTMATTER_BYTES`, invalid or refused YAML (aliases, duplicate
    or merge keys, nesting over `MAX_YAML_DEPTH`), not a mapping, an unknown field, a
    missing or invalid `name` or `description`, a `name` other than `slug`, or an invalid
    optional field.
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


class _Mark(Protocol):
    """A position in the YAML text (PyYAML has a pure-Python and a C class for it)."""

    @property
    def index(self) -> int: ...


def _line_of(source: str, mark: _Mark | None) -> int | None:
    """Return the SKILL.md line of a position in the frontmatter (the opening `---` is 1)."""
    if mark is None:
        return None
    # Counted from the character index rather than taken from `mark.line`, because YAML also
    # breaks lines at U+0085, U+2028 and U+2029, which Markdown editors do not.
    return source.count("\n", 0, mark.index) + 2


if TYPE_CHECKING:
    # What the refusals extend, as type checkers see it; at run time they are a mixin, put
    # before either loader's parser, composer and constructor.
    _Loader = yaml.SafeLoader
else:
    _Loader = object


class _Refusals(_Loader):
    """The refusals of the frontmatter's loaders, over PyYAML's safe loading.

    Anchors and aliases, merge keys, duplicate keys and deep nesting are refused, as is a
    value PyYAML's constructors cannot build (an impossible date, a tag a value does not
    fit), which they report with whatever Python exception they meet.
    """

    _source: str
    _depth: int

    def _refuse(self, rule: str, detail: str, mark: _Mark | None) -> FrontmatterInvalid:
        return FrontmatterInvalid(rule, detail, _line_of(self._source, mark))

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        # types-PyYAML leaves Parser.peek_event unannotated; it returns the next Event.
        event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            raise self._refuse(RULE_YAML_ALIAS, "YAML aliases are not accepted", event.start_mark)
        if isinstance(event, yaml.NodeEvent) and event.anchor is not None:
            raise self._refuse(RULE_YAML_ALIAS, "YAML anchors are not accepted", event.start_mark)
        if self._depth >= MAX_YAML_DEPTH:
            raise self._refuse(
                RULE_YAML_TOO_DEEP,
                f"the YAML nests deeper than {MAX_YAML_DEPTH} levels",
                event.start_mark,
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(
        self,
        node: yaml.Node,
        deep: bool = False,  # noqa: FBT001, FBT002, ARG002 - PyYAML's signature
    ) -> object:
        # Always deep: PyYAML builds a mapping, a set or a list in two steps, the second one
        # later and outside this call unless `deep`; deep, a failure is met here, at its node.
        try:
            return super().construct_object(node, deep=True)
        except (FrontmatterInvalid, yaml.YAMLError):
            raise
        except Exception:  # noqa: BLE001 - whatever PyYAML's constructor met in the input
            kind = node.tag.rpartition(":")[2] if node.tag.startswith("tag:yaml.org,") else "value"
            raise self._refuse(
                RULE_INVALID_YAML,
                f"the value is not a valid YAML {kind}; quote it to keep it as text",
                node.start_mark,
            ) from None

    def construct_mapping(
        self,
        node: yaml.MappingNode,
        deep: bool = False,  # noqa: FBT001, FBT002 - PyYAML's signature
    ) -> dict[Hashable, object]:
        seen: set[Hashable] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise self._refuse(
                    RULE_YAML_MERGE_KEY,
                    "YAML merge keys ('<<') are not accepted",
                    key_node.start_mark,
                )
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable):
                if key in seen:
                    raise self._refuse(
                        RULE_YAML_DUPLICATE_KEY,
                        f"the key {key!r} appears twice",
                        key_node.start_mark,
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


class _StrictLoader(_Refusals, yaml.SafeLoader):
    """PyYAML's safe loader, pure Python, with the refusals."""

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self._source = source
        self._depth = 0


# Where libyaml and PyYAML's Python reader part ways (tests/domain/test_frontmatter_parsers.py
# compares them on generated documents): a tab as a separator, tags (`!`), explicit keys
# (`?`), a comment right after a block scalar's header, and the characters they count or
# skip differently (CR, NEL, LS, PS, a byte-order mark). A frontmatter holding any of them
# is read by the Python loader alone.
_LIBYAML_DIFFERS: Final = re.compile(r"[\t!?\r\x85\u2028\u2029\ufeff]|[|>][0-9+-]*#")
_LibyamlLoader: type[_Refusals] | None = None
try:
    # libyaml's parser, the safe constructor and the resolver (its public face; the parser
    # alone is `yaml._yaml`'s, a private module).
    from yaml import CSafeLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    pass  # `_LibyamlLoader` stays None: the Python loader reads every frontmatter
else:

    class _ParsedByLibyaml(_Refusals, yaml.composer.Composer, CSafeLoader):
        """The same loader over libyaml's parser: PyYAML's composer, refusals and constructor.

        libyaml (C) reads the text into events; the nodes and values are built in Python,
        as by `_StrictLoader`, so every refusal hook runs. Four to seven times faster than
        reading the text in Python (docs/package-format.md).
        """

        def __init__(self, source: str) -> None:
            CSafeLoader.__init__(self, source)
            yaml.composer.Composer.__init__(self)
            self._source = source
            self._depth = 0

    _LibyamlLoader = _ParsedByLibyaml


@functools.lru_cache(maxsize=LOADED_CACHE_SIZE)
def _load_cached(source: str) -> tuple[object, dict[str, int]]:
    """`_load`, remembered: a package saved again mostly keeps its `SKILL.md`.

    Loading runs the composer and the constructor in Python even when libyaml parses the
    text (66 µs for a dozen lines), and the Python parser alone, when it reads the text,
    about 0.5-1 ms. Only what the YAML says is kept,
    keyed by its exact text; `_validate` checks it against the slug on every call, and
    only reads it (the `Frontmatter` it builds copies what it keeps). A refusal raises
    and is not remembered.
    """
    return _load(source)


def _load(source: str) -> tuple[object, dict[str, int]]:
    """Load the frontmatter YAML; return the value and the line of each top-level key.

    libyaml parses it where PyYAML has it (`_LibyamlLoader`), unless the text holds what
    the two parsers read differently (`_LIBYAML_DIFFERS`); a document libyaml does not
    accept, or one the refusals stop, is loaded again by the pure-Python loader, whose
    words and lines every refusal carries. Either way the result is the pure loader's
    (tests/domain/test_frontmatter_parsers.py compares the two).
    """
    if _LibyamlLoader is not None and not _LIBYAML_DIFFERS.search(source):
        try:
            return _read(_LibyamlLoader(source), source)
        except (FrontmatterInvalid, yaml.YAMLError):
            pass  # read again below, so the refusal is worded and placed as always
    try:
        # The reader refuses unprintable characters as soon as it is built.
        return _read(_StrictLoader(source), source)
    except yaml.MarkedYAMLError as exc:
        detail = "; ".join(part for part in (exc.context, exc.problem) if part)
        raise FrontmatterInvalid(
            RULE_INVALID_YAML, detail or "invalid YAML", _line_of(source, exc.problem_mark)
        ) from None
    except yaml.reader.ReaderError as exc:
        raise FrontmatterInvalid(
            RULE_INVALID_YAML,
            f"character U+{exc.character:04X} is not allowed in YAML"
            if isinstance(exc.character, int)
            else "invalid character",
            source.count("\n", 0, exc.position) + 2,
        ) from None


def _read(loader: _Refusals, source: str) -> tuple[object, dict[str, int]]:
    """The document `loader` reads (then disposed of), and the line of each top-level key."""
    try:
        node = loader.get_single_node()
        value = None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()
    lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                line = _line_of(source, key_node.start_mark)
                if line is not None:
                    lines.setdefault(key_node.value, line)
    return value, lines


def _validate(fields: object, lines: Mapping[str, int], slug: str, body: str) -> Frontmatter:
    if not isinstance(fields, dict):
        kind = "empty" if fields is None else f"a {type(fields).__name__}"
        raise FrontmatterInvalid(RULE_NOT_MAPPING, f"the frontmatter is {kind}, not a mapping", 2)
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
                lines.get(key) if isinstance(key, str) else None,
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
    value = _optional_text(fields, lines, key, invalid)
    if value is None:
        raise FrontmatterInvalid(invalid, f"{key!r} must be a string, not null", lines.get(key))
    return value


def _optional_text(
    fields: Mapping[object, object], lines: Mapping[str, int], key: str, invalid: str
) -> str | None:
    value = fields.get(key)
    if value is None or isinstance(value, str):
        return value
    raise FrontmatterInvalid(
        invalid, f"{key!r} must be a string, not {type(value).__name__}", lines.get(key)
    )


def _check_length(value: str, *, high: int, lines: Mapping[str, int], key: str, rule: str) -> None:
    if not value.strip():
        raise FrontmatterInvalid(rule, f"{key!r} must not be blank", lines.get(key))
    if len(value) > high:
        raise FrontmatterInvalid(
            rule, f"{key!r} has {len(value)} characters, at most {high} allowed", lines.get(key)
        )


def _metadata(value: object, lines: Mapping[str, int]) -> Mapping[str, str]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, dict):
        raise FrontmatterInvalid(
            RULE_INVALID_METADATA,
            f"'metadata' must be a mapping, not {type(value).__name__}",
            lines.get("metadata"),
        )
    for key, item in value.items():
        if key == TRIGGERS_KEY and not isinstance(item, str):
            raise FrontmatterInvalid(
                RULE_INVALID_TRIGGERS,
                f"'metadata.triggers' is a {type(item).__name__}; {TRIGGERS_FORM}",
                lines.get("metadata"),
            )
        if not isinstance(key, str) or not isinstance(item, str):
            raise FrontmatterInvalid(
                RULE_INVALID_METADATA,
                f"'metadata' maps strings to strings; the entry {key!r} does not",
                lines.get("metadata"),
            )
    return MappingProxyType(dict(value))
