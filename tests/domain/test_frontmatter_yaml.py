"""The frontmatter's YAML on generated documents: the registry reads what strictyaml reads.

`registry/domain/frontmatter.py` refuses, in one pass over strictyaml's parser events,
what strictyaml refuses (tags, flow style, anchors and aliases, duplicate keys, syntax
errors, characters YAML does not allow) and a few things it accepts (merge keys, deep
nesting, many nodes); then strictyaml loads the rest. On thousands of generated
documents: every outcome is a value or a `FrontmatterInvalid` (strictyaml itself fails
with `AttributeError`, `AssertionError` or `NotImplementedError` on some, which must never
escape); every accepted document is strictyaml's value; and every refusal beyond
strictyaml's is one of the registry's own rules.
"""

from __future__ import annotations

import random

import pytest
import strictyaml

from registry.domain import frontmatter
from registry.errors import FrontmatterInvalid

# Pieces of YAML the generator strings together: plain words in several scripts, every
# indicator, the scalars YAML 1.1 resolves to other types, escapes, breaks and indents.
PIECES = (
    *("a", "b c", "é", "naïve café", "日本", "\U0001f600", "key", "name", "description"),
    *("x: y", "a:b", '"a":b', "'q'", '"dq"', "''", "#", " # c", "  # after", "#x"),
    *("-", "- x", ":", "{", "}", "[", "]", ",", "&a", "*a", "|", ">", "|+", ">-", "|1"),
    *("%", "%YAML 1.1", "@", "`", "=", "<", "...", "{a}", "[a: b]", "{ }", "[ ]", "[[[]]]"),
    *("{a: [b, {c: d}]}", "yes", "No", "On", "OFF", "Y", "n", "~", "null", "NULL", "<<"),
    *("1.5", "0x1F", "0o17", "0b101", "+1", "-0", "1_000", "1e3", "3.", ".5", ".inf"),
    *("-.inf", ".NaN", "12:30", "2020-01-01", "2001-12-14 21:59:43.10 -5", "2020-02-30"),
    *("\\", "\\n", "\\x41", "\\u00e9", "\\/", "\\e", "\\0", "\\N", "\\_", "\\x", "\\u12"),
    *(" ", "  ", "\n", "\n\n", "\n  ", "\n   ", "\n- ", "\n - ", "\n  - a\n  - b"),
    *('"\n  multi\n  line"', "'\n  multi\n  line'", "\n    x: 1\n    y: 2"),
    *("\u00a0", "\u3000", "\x7f", "\x00", "\x1b", "\ud7ff", "\ue000", "\ufffd", "\U0010ffff"),
    *("\t", "!", "!!str", "!!int", "?", "? k", "\r\n", "\x85", "\u2028", "\ufeff", ">#"),
)

# The refusals strictyaml does not make: it reads these documents.
OWN_RULES = {"yaml_merge_key", "yaml_too_deep", "yaml_too_many_nodes"}


def _scalar(rnd: random.Random) -> str:
    words = "".join(rnd.choice(PIECES) for _ in range(rnd.randrange(1, 5)))
    style = rnd.randrange(6)
    if style == 0:
        return words.replace("\n", " ")
    if style == 1:
        return "'" + words.replace("'", "''") + "'"
    if style == 2:
        return '"' + words.replace('"', '\\"') + '"'
    if style == 3:
        header = rnd.choice(["|", ">", "|-", ">+", "|2"])
        return header + "\n  " + words.replace("\n", "\n  ")
    if style == 4:
        return "\n" + "".join(f"  - {rnd.choice(PIECES)}\n" for _ in range(rnd.randrange(1, 4)))
    pairs = (f"  {rnd.choice(PIECES)}: {rnd.choice(PIECES)}" for _ in range(rnd.randrange(1, 4)))
    return "\n" + "\n".join(pairs)


def _document(rnd: random.Random) -> str:
    lines = []
    for _ in range(rnd.randrange(1, 6)):
        key = rnd.choice(["name", "description", "license", "metadata", "k", "'q k'", "<<"])
        if rnd.random() < 0.1:
            key = rnd.choice(PIECES)
        if rnd.random() < 0.2:
            lines.append(f"{key}:")
            for _ in range(rnd.randrange(1, 3)):
                indent = rnd.choice(["  ", "    ", "\t", "  - "])
                lines.append(f"{indent}{rnd.choice(PIECES)}: {_scalar(rnd)}")
        else:
            lines.append(f"{key}:{rnd.choice([' ', '  ', chr(9), ''])}{_scalar(rnd)}")
        if rnd.random() < 0.1:
            lines.append(rnd.choice(["# comment", "", "  ", "..."]))
    return "\n".join(lines) + "\n"


def _text(value: object) -> object:
    """strictyaml's value with its untyped scalars (`=`, `<<`) as their text."""
    if isinstance(value, dict):
        return {str(key): _text(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_text(item) for item in value]
    return str(value)


def _strictyaml(source: str) -> tuple[str, object]:
    try:
        return ("read", _text(strictyaml.load(source).data))
    except Exception as exc:  # strictyaml's own failures included (see the docstring)
        return ("refused", type(exc).__name__)


def test_generated_documents_are_read_as_strictyaml_reads_them():
    rnd = random.Random(38)
    outcomes = {"read": 0, "refused": 0, "own": 0}
    for _ in range(4_000):
        source = _document(rnd)
        theirs = _strictyaml(source)
        try:
            ours: tuple[str, object] = ("read", frontmatter._load(source)[0])
        except FrontmatterInvalid as exc:
            ours = ("refused", exc.rule)
        if ours[0] == "read":
            assert ours == theirs, source
        elif ours[1] in OWN_RULES:
            outcomes["own"] += 1
            continue
        elif ours[1] != "not_a_mapping":
            assert theirs[0] == "refused", (source, ours)
        outcomes[ours[0]] += 1
    # The generator must keep producing documents of every kind.
    assert min(outcomes.values()) > 100, outcomes


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        ("k: v\n<<:\n  a: b\n", "yaml_merge_key"),  # strictyaml merges the mapping in
        ("k: *a\n", "yaml_alias"),  # strictyaml fails on the missing anchor (ComposerError)
        ("k:\n" + "".join(" " * n + "- a:\n" for n in range(0, 40, 2)), "yaml_too_deep"),
        ("k:\n" + "  - x\n" * 300, "yaml_too_many_nodes"),
        ("? - a\n: b\n", "invalid_yaml"),  # strictyaml: AssertionError
        ("license: \x07\n", "invalid_yaml"),  # strictyaml: AttributeError
    ],
)
def test_what_the_event_pass_refuses_before_strictyaml(source, rule):
    with pytest.raises(FrontmatterInvalid) as refused:
        frontmatter._load(source)
    assert refused.value.rule == rule


def test_the_values_are_strictyamls_and_the_lines_the_keys():
    source = "name: pdf\ndescription: yes\nmetadata:\n  version: 1.0\n  when: 2020-02-30\n"
    value, lines = frontmatter._load(source)
    assert value == strictyaml.load(source).data
    assert value == {
        "name": "pdf",
        "description": "yes",
        "metadata": {"version": "1.0", "when": "2020-02-30"},
    }
    assert lines == {"name": 2, "description": 3, "metadata": 4}
