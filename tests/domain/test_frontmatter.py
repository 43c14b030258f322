import pytest

from registry.domain import frontmatter
from registry.domain.frontmatter import (
    FIELDS,
    LOADED_CACHE_CHARS,
    MAX_FRONTMATTER_BYTES,
    Frontmatter,
    parse_skill_md,
)
from registry.errors import FrontmatterInvalid, InvalidName
from tests.corpus import fakes

SLUG = "pdf-report"


def doc(*lines: str, body: str = "# PDF report\n") -> bytes:
    return ("---\n" + "".join(f"{line}\n" for line in lines) + "---\n" + body).encode()


BASE = (f"name: {SLUG}", "description: Makes PDF reports from tables.")


def refusal(data: bytes, slug: str = SLUG) -> FrontmatterInvalid:
    with pytest.raises(FrontmatterInvalid) as info:
        parse_skill_md(data, slug)
    assert info.value.path == "SKILL.md"
    return info.value


# ---------------------------------------------------------------- accepted


def test_minimal():
    front = parse_skill_md(doc(*BASE), SLUG)
    assert front == Frontmatter(
        name=SLUG,
        description="Makes PDF reports from tables.",
        license=None,
        compatibility=None,
        metadata={},
        allowed_tools=None,
        body="# PDF report\n",
    )
    hash(front)


def test_every_field():
    front = parse_skill_md(
        doc(
            *BASE,
            "license: Apache-2.0",
            "compatibility: Needs Python 3.11 and network access.",
            "metadata:",
            "  author: acme",
            '  version: "1.0"',
            "allowed-tools: Bash(git:*) Read",
        ),
        SLUG,
    )
    assert front.license == "Apache-2.0"
    assert front.compatibility == "Needs Python 3.11 and network access."
    assert dict(front.metadata) == {"author": "acme", "version": "1.0"}
    assert front.allowed_tools == "Bash(git:*) Read"
    assert set(FIELDS) == {"name", "description", "license", "compatibility", "metadata"} | {
        "allowed-tools"
    }


def test_metadata_is_read_only():
    front = parse_skill_md(doc(*BASE, "metadata:", "  a: b"), SLUG)
    with pytest.raises(TypeError):
        front.metadata["a"] = "c"  # type: ignore[index]


def test_optional_fields_may_be_null():
    front = parse_skill_md(doc(*BASE, "license:", "metadata: ~", "compatibility: null"), SLUG)
    assert (front.license, front.compatibility, dict(front.metadata)) == (None, None, {})


def test_body_is_kept_verbatim():
    body = "# Title\n\n---\n\nA rule above.\n\u00e9\n"
    assert parse_skill_md(doc(*BASE, body=body), SLUG).body == body
    assert parse_skill_md(doc(*BASE, body=""), SLUG).body == ""
    assert parse_skill_md(doc(*BASE).rstrip(b"\n"), SLUG).body == "# PDF report"


def test_closing_delimiter_at_end_of_file():
    data = f"---\nname: {SLUG}\ndescription: d\n---".encode()
    assert parse_skill_md(data, SLUG).body == ""


def test_crlf_and_trailing_blanks_on_delimiters():
    data = doc(*BASE).replace(b"\n", b"\r\n").replace(b"---\r\n", b"--- \t\r\n", 1)
    front = parse_skill_md(data, SLUG)
    assert front.name == SLUG
    assert front.body == "# PDF report\r\n"


def test_description_bounds_count_characters():
    assert parse_skill_md(doc(f"name: {SLUG}", "description: " + "d" * 1024), SLUG)
    assert parse_skill_md(doc(f"name: {SLUG}", "description: " + "\u00e9" * 1024), SLUG)
    assert parse_skill_md(doc(*BASE, "compatibility: " + "c" * 500), SLUG)


def test_quoted_and_block_scalars():
    front = parse_skill_md(doc(f'name: "{SLUG}"', "description: >", "  Folded", "  text."), SLUG)
    assert front.description == "Folded text.\n"


# ---------------------------------------------------------------- the envelope


def test_not_utf8_names_the_line():
    latin1 = f"---\nname: {SLUG}\ndescription: ok\nlicense: caf\xe9\n---\n".encode("latin-1")
    error = refusal(latin1)
    assert (error.rule, error.line) == ("not_utf8", 4)
    assert refusal(doc(*BASE, body="caf\xe9").replace(b"\xc3\xa9", b"\xe9")).line == 5


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (b"", 1),
        (b"# Title\n", 1),
        (b"\n---\nname: x\n---\n", 1),
        (b"--\nname: x\n---\n", 1),
        (b"----\nname: x\n---\n", 1),
        (b" ---\nname: x\n---\n", 1),
        (b"\xef\xbb\xbf---\nname: x\n---\n", 1),
    ],
)
def test_must_open_with_a_delimiter_line(data, line):
    error = refusal(data)
    assert (error.rule, error.line) == ("no_frontmatter", line)


@pytest.mark.parametrize("data", [b"---", b"---\n", b"---\nname: x\n", b"---\nname: x\n--\n"])
def test_must_close(data):
    assert refusal(data).rule == "unterminated_frontmatter"


def test_frontmatter_size_is_bounded():
    filler = "# " + "x" * 78
    lines = [*BASE, *[filler] * (MAX_FRONTMATTER_BYTES // 80)]
    assert refusal(doc(*lines)).rule == "frontmatter_too_large"
    unterminated = ("---\n" + "\n".join(lines) + "\n").encode() + b"# body" * 100_000
    assert refusal(unterminated).rule == "frontmatter_too_large"
    just_fits = [*BASE, *[filler] * ((MAX_FRONTMATTER_BYTES - 200) // 81)]
    assert parse_skill_md(doc(*just_fits), SLUG).name == SLUG


def test_size_bound_is_in_bytes():
    comment = "# " + "\u00e9" * 20_000  # 40 002 bytes in 20 002 characters
    assert refusal(doc(*BASE, comment, comment)).rule == "frontmatter_too_large"


# ---------------------------------------------------------------- YAML


@pytest.mark.parametrize(
    ("lines", "line"),
    [
        ((*BASE, "  indented: wrong"), 4),
        ((f"name: {SLUG}", "\tdescription: tab"), 3),
        ((*BASE, "license: a: b"), 4),
        ((f"name: [{SLUG}",), 3),
        ((*BASE, "", "", "license: [unclosed, {"), 7),
        ((*BASE, "license: !!python/object:os.system x"), 4),
        ((*BASE, "license: \x07"), 4),
    ],
)
def test_yaml_errors_name_the_skill_md_line(lines, line):
    error = refusal(doc(*lines))
    assert (error.rule, error.line) == ("invalid_yaml", line)
    assert f"(line {line})" in str(error)


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ("license: 2020-02-30", 4),  # a timestamp by its shape, no such day
        ("license: 0000-01-01", 4),
        ("license: " + "1" * 5_000, 4),  # an int by its shape, over Python's digit limit
        ("license: !!int zz", 4),
        ("license: !!int 0x", 4),
        ("license: !!int ''", 4),
        ("license: !!float zz", 4),
        ("license: !!bool maybe", 4),
        ("license: !!timestamp nope", 4),
        ("metadata:\n  k: v\n  x: !!set [a]", 6),  # inside a mapping: its own line
        ("metadata: {k: v, x: 2020-02-30}", 4),
    ],
)
def test_values_yaml_cannot_construct_are_refused_on_their_line(value, line):
    # PyYAML's constructors raise ValueError, KeyError, TypeError, AttributeError or
    # IndexError on these; each is a refusal of the file, with the line of the value.
    error = refusal(doc(*BASE, *value.split("\n")))
    assert (error.rule, error.line) == ("invalid_yaml", line)
    assert "quote it" in error.detail
    assert "zz" not in str(error)  # no content quoted
    assert "maybe" not in str(error)


def test_yaml_error_lines_count_crlf_lines_once():
    data = doc(*BASE, "  indented: wrong").replace(b"\n", b"\r\n")
    assert refusal(data).line == 4


def test_yaml_error_detail_does_not_quote_the_line():
    error = refusal(doc(*BASE, f"license: {fakes.GITHUB_TOKEN} : : ["))
    assert error.rule == "invalid_yaml"
    assert fakes.GITHUB_TOKEN not in str(error)
    assert fakes.GITHUB_TOKEN not in repr(error.details())


def test_alias_bomb_is_refused_before_expansion():
    lines = [*BASE, "l0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    error = refusal(doc(*lines))
    assert (error.rule, error.line) == ("yaml_alias", 4)


@pytest.mark.parametrize(
    "lines",
    [
        (*BASE, "license: &x MIT"),
        (f"name: &n {SLUG}", "description: *n"),
        (*BASE, "metadata: &m {a: b}"),
        (*BASE, "license: *undefined"),
    ],
)
def test_anchors_and_aliases_are_refused(lines):
    assert refusal(doc(*lines)).rule == "yaml_alias"


def test_merge_keys_are_refused():
    error = refusal(doc(*BASE, "metadata:", "  <<: {a: b}"))
    assert (error.rule, error.line) == ("yaml_merge_key", 5)


@pytest.mark.parametrize(
    ("lines", "line"),
    [
        ((*BASE, f"name: {SLUG}"), 4),
        ((*BASE, "'description': again"), 4),
        ((*BASE, "metadata:", "  k: v", "  k: w"), 6),
        ((*BASE, "metadata: {k: v, k: w}"), 4),
    ],
)
def test_duplicate_keys_are_refused(lines, line):
    error = refusal(doc(*lines))
    assert (error.rule, error.line) == ("yaml_duplicate_key", line)


def test_deep_nesting_is_refused_without_recursion():
    error = refusal(doc(*BASE, "metadata: " + "[" * 30_000))
    assert error.rule == "yaml_too_deep"
    assert parse_skill_md(doc(*BASE), SLUG)  # the loader left no state behind


@pytest.mark.parametrize(
    "frontmatter",
    [b"- a\n- b\n", b"just a string\n", b"42\n", b"", b"# only a comment\n"],
)
def test_frontmatter_must_be_a_mapping(frontmatter):
    assert refusal(b"---\n" + frontmatter + b"---\n").rule == "not_a_mapping"


# ---------------------------------------------------------------- fields


@pytest.mark.parametrize(
    ("extra", "key"),
    [("version: 1.0", "version"), ("Name: x", "Name"), ("allowed_tools: Read", "allowed_tools")],
)
def test_unknown_fields_are_refused_by_name(extra, key):
    error = refusal(doc(*BASE, extra))
    assert (error.rule, error.line) == ("unknown_field", 4)
    assert repr(key) in error.detail


def test_non_string_keys_are_unknown_fields():
    assert refusal(doc(*BASE, "1: one")).rule == "unknown_field"


@pytest.mark.parametrize(
    ("lines", "rule", "line"),
    [
        (("description: d",), "missing_name", None),
        (("name: 42", "description: d"), "invalid_name", 2),
        (("name:", "description: d"), "invalid_name", 2),
        (("name: [a]", "description: d"), "invalid_name", 2),
        (("name: PDF-Report", "description: d"), "invalid_name", 2),
        (("name: pdf--report", "description: d"), "invalid_name", 2),
        (("name: -pdf", "description: d"), "invalid_name", 2),
        (("name: " + "a" * 65, "description: d"), "invalid_name", 2),
        (("description: d", "name: other-skill"), "name_mismatch", 3),
        ((f"name: {SLUG}",), "missing_description", None),
        ((f"name: {SLUG}", "description:"), "invalid_description", 3),
        ((f"name: {SLUG}", "description: ''"), "invalid_description", 3),
        ((f"name: {SLUG}", "description: '   '"), "invalid_description", 3),
        ((f"name: {SLUG}", "description: 12"), "invalid_description", 3),
        ((f"name: {SLUG}", "description: [a, b]"), "invalid_description", 3),
        ((f"name: {SLUG}", "description: " + "d" * 1025), "invalid_description", 3),
        ((*BASE, "license: 2"), "invalid_license", 4),
        ((*BASE, "license: [MIT]"), "invalid_license", 4),
        ((*BASE, "compatibility: " + "c" * 501), "invalid_compatibility", 4),
        ((*BASE, "compatibility: ''"), "invalid_compatibility", 4),
        ((*BASE, "compatibility: {a: b}"), "invalid_compatibility", 4),
        ((*BASE, "metadata: a string"), "invalid_metadata", 4),
        ((*BASE, "metadata: [a, b]"), "invalid_metadata", 4),
        ((*BASE, "metadata: {version: 1.0}"), "invalid_metadata", 4),
        ((*BASE, "metadata: {1: one}"), "invalid_metadata", 4),
        ((*BASE, "metadata:", "  nested: {a: b}"), "invalid_metadata", 4),
        ((*BASE, "metadata: {a: null}"), "invalid_metadata", 4),
        ((*BASE, "allowed-tools: [Read, Bash]"), "invalid_allowed_tools", 4),
    ],
)
def test_field_rules(lines, rule, line):
    error = refusal(doc(*lines))
    assert (error.rule, error.line) == (rule, line)


def test_name_must_equal_the_slug_exactly():
    error = refusal(doc(*BASE), slug="pdf-reports")
    assert error.rule == "name_mismatch"
    assert "pdf-reports" in error.detail


def test_the_slug_itself_is_checked():
    with pytest.raises(InvalidName):
        parse_skill_md(doc(*BASE), "PDF Report")


def test_details_are_json_ready():
    error = refusal(doc(*BASE, "version: 2"))
    assert error.details() == {
        "path": "SKILL.md",
        "rule": "unknown_field",
        "detail": error.detail,
        "line": 4,
    }


# ---------------------------------------------------------------- the loaded cache


@pytest.fixture
def loads(monkeypatch):
    """How many times a frontmatter's YAML is loaded, with an empty cache."""
    built = []
    real = frontmatter._load

    def counting(source):
        built.append(source)
        return real(source)

    monkeypatch.setattr(frontmatter, "_load", counting)
    frontmatter._load_cached.cache_clear()
    yield built
    frontmatter._load_cached.cache_clear()


def test_a_frontmatter_seen_before_is_not_loaded_again(loads):
    data = doc(*BASE, "metadata:", "  triggers: |", "    make a pdf", "    build a report")
    first = parse_skill_md(data, SLUG)
    again = parse_skill_md(data, SLUG)
    assert again == first
    assert again.triggers == ("make a pdf", "build a report")
    assert len(loads) == 1
    # Another body, the same frontmatter: still one load.
    assert parse_skill_md(doc(*BASE, body="# Other\n"), SLUG).body == "# Other\n"
    assert len(loads) == 2  # BASE alone is another frontmatter
    parse_skill_md(doc(*BASE, body="# Third\n"), SLUG)
    assert len(loads) == 2


def test_a_remembered_frontmatter_is_still_checked_against_the_slug(loads):
    data = doc(*BASE)
    parse_skill_md(data, SLUG)
    assert refusal(data, slug="other-skill").rule == "name_mismatch"
    assert len(loads) == 1


def test_a_refused_frontmatter_is_refused_every_time(loads):
    data = doc(*BASE, "name: again")
    assert refusal(data).rule == "yaml_duplicate_key"
    assert refusal(data).rule == "yaml_duplicate_key"
    assert len(loads) == 2


def test_what_a_caller_gets_cannot_change_what_is_remembered(loads):
    data = doc(*BASE, "metadata:", "  author: acme")
    first = parse_skill_md(data, SLUG)
    with pytest.raises(TypeError):
        first.metadata["author"] = "someone else"  # type: ignore[index]
    assert parse_skill_md(data, SLUG).metadata == {"author": "acme"}


def test_a_long_frontmatter_is_not_remembered(loads):
    short = doc(*BASE, "compatibility: " + "x" * 400, "metadata:")
    padded = doc(*BASE, "metadata:", *(f"  k{i}: {'v' * 60}" for i in range(300)))
    assert len(padded) > LOADED_CACHE_CHARS
    parse_skill_md(padded, SLUG)
    parse_skill_md(padded, SLUG)
    assert len(loads) == 2
    parse_skill_md(short, SLUG)
    parse_skill_md(short, SLUG)
    assert len(loads) == 3
