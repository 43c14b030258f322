"""The frontmatter's two YAML parsers give one result (registry/domain/frontmatter.py).

libyaml parses a frontmatter where PyYAML has it; the pure-Python loader reads what libyaml
does not accept, what the refusals stop, and any text holding what the two read
differently (`_LIBYAML_DIFFERS`). These tests compare the two loaders on generated
documents, show that each thing the guard names does part them, and check which loader
`parse_skill_md` uses.
"""

from __future__ import annotations

import random

import pytest
import yaml

from registry.domain import frontmatter
from registry.errors import FrontmatterInvalid

pytestmark = pytest.mark.skipif(
    frontmatter._LibyamlLoader is None, reason="PyYAML without libyaml reads in Python alone"
)

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
    # What the guard keeps from libyaml: generated too, so the test sees it is kept away.
    *("\t", "!", "!!str", "!!int", "?", "\r\n", "\x85", "\u2028", "\ufeff", ">#", "|-#"),
)


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
        return "[" + ", ".join(rnd.choice(PIECES) for _ in range(rnd.randrange(4))) + "]"
    pairs = (f"{rnd.choice(PIECES)}: {rnd.choice(PIECES)}" for _ in range(rnd.randrange(3)))
    return "{" + ", ".join(pairs) + "}"


def _document(rnd: random.Random) -> str:
    lines = []
    for _ in range(rnd.randrange(1, 6)):
        key = rnd.choice(["name", "description", "license", "metadata", "k", "'q k'"])
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


def _outcome(loader: type[frontmatter._Refusals], source: str) -> tuple[object, ...]:
    """What one loader makes of `source`: its value and lines, or how it refused."""
    try:
        value, lines = frontmatter._read(loader(source), source)
    except FrontmatterInvalid as exc:
        return ("refused", exc.rule, exc.line)
    except yaml.YAMLError as exc:
        return ("error", type(exc).__name__)
    return ("read", repr(value), lines)


def test_libyaml_reads_what_it_accepts_as_the_python_loader_does():
    libyaml = frontmatter._LibyamlLoader
    assert libyaml is not None
    rnd = random.Random(20261203)
    compared = accepted = 0
    for _ in range(6_000):
        source = _document(rnd)
        if frontmatter._LIBYAML_DIFFERS.search(source):
            continue
        compared += 1
        fast = _outcome(libyaml, source)
        if fast[0] == "read":
            accepted += 1
            assert fast == _outcome(frontmatter._StrictLoader, source), source
    # The generator must keep producing documents worth comparing.
    assert compared > 1_000
    assert accepted > 300


@pytest.mark.parametrize(
    "source",
    [
        "k:\tv\n",  # a tab as the separator: libyaml reads it, Python refuses
        "license: !\n",  # an empty tagged node: '' against None
        "k: [!!str, x]\n",
        "license: [?, ,]\n",  # an empty explicit key in a flow sequence
        "k: >#?\n",  # a comment right after a block scalar's header
        "\ufeff:{x: y}\nmetadata: v\n",  # libyaml skips the mark: lines shift
        "'q k':  \u2028\ufeffkey: y\n",  # LS: a line break for one of them only
        "k:\x85\ufeff\n",
    ],
)
def test_what_the_guard_names_parts_the_two_parsers(source):
    libyaml = frontmatter._LibyamlLoader
    assert libyaml is not None
    assert frontmatter._LIBYAML_DIFFERS.search(source)
    python = _outcome(frontmatter._StrictLoader, source)
    assert _outcome(libyaml, source) != python
    # Through `_load` the Python loader's reading stands.
    try:
        loaded: tuple[object, ...] = ("read", *map(repr, frontmatter._load(source)[:1]))
    except FrontmatterInvalid:
        loaded = ("refused",)
    assert loaded[0] == ("read" if python[0] == "read" else "refused")
    if python[0] == "read":
        assert loaded[1] == python[1]


@pytest.fixture
def built(monkeypatch):
    """The loaders `_load` builds, by kind, in order."""
    kinds: list[str] = []
    for name, kind in (("_LibyamlLoader", "libyaml"), ("_StrictLoader", "python")):
        real = getattr(frontmatter, name)

        def building(source, real=real, kind=kind):
            kinds.append(kind)
            return real(source)

        monkeypatch.setattr(frontmatter, name, building)
    return kinds


def test_a_plain_frontmatter_is_read_by_libyaml_alone(built):
    value, lines = frontmatter._load("name: pdf\ndescription: Makes PDFs.\nmetadata:\n  a: b\n")
    assert value == {"name": "pdf", "description": "Makes PDFs.", "metadata": {"a": "b"}}
    assert lines == {"name": 2, "description": 3, "metadata": 4}
    assert built == ["libyaml"]


def test_a_refusal_is_worded_and_placed_by_the_python_loader(built):
    with pytest.raises(FrontmatterInvalid) as refused:
        frontmatter._load("name: pdf\ndescription: a: b\n")
    assert built == ["libyaml", "python"]
    assert refused.value.rule == "invalid_yaml"
    assert refused.value.line == 3
    # PyYAML's Python words, not libyaml's ("... not allowed in this context").
    assert refused.value.detail == "mapping values are not allowed here"


def test_text_the_parsers_read_differently_goes_to_the_python_loader_alone(built):
    assert frontmatter._load("name: pdf\ndescription: Why not?\n")[0] == {
        "name": "pdf",
        "description": "Why not?",
    }
    assert built == ["python"]
