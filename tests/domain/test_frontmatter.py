import pytest

from registry.domain import frontmatter
from registry.domain.frontmatter import (
    FIELDS,
    LOADED_CACHE_CHARS,
    MAX_FRONTMATTER_BYTES,
    MAX_YAML_NODES,
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


def test_empty_optional_fields_are_absent():
    lines = ("license:", "metadata:", "compatibility: ''", 'allowed-tools: ""')
    front = parse_skill_md(doc(*BASE, *lines), SLUG)
    assert (front.license, front.compatibility, front.allowed_tools) == (None, None, None)
    assert dict(front.metadata) == {}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("yes", "yes"),
        ("No", "No"),
        ("1.0", "1.0"),
        ("1.10", "1.10"),
        ("0x1F", "0x1F"),
        ("2024", "2024"),
        ("null", "null"),
        ("~", "~"),
        ("2020-02-30", "2020-02-30"),
        ("2001-12-14 21:59:43.10 -5", "2001-12-14 21:59:43.10 -5"),
        ("1" * 1_000, "1" * 1_000),  # an int by its shape, once over PyYAML's digit limit
        (".inf", ".inf"),
        ("=", "="),
    ],
)
def test_every_value_is_text(value, text):
    # What YAML 1.1 would type (booleans, numbers, null, dates) is text, as the
    # specification and its reference validator (strictyaml) read it.
    front = parse_skill_md(
        doc(
            f"name: {SLUG}",
            f"description: {value}",
            f"license: {value}",
            "metadata:",
            f"  v: {value}",
        ),
        SLUG,
    )
    assert (front.description, front.license, dict(front.metadata)) == (text, text, {"v": text})


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
        ((f'name: "{SLUG}',), 3),
        ((*BASE, "", "", "license: 'unclosed"), 7),
        ((*BASE, "license: \x07"), 4),
        ((*BASE, "--- x"), 4),
        ((*BASE, "? - a", ": b"), 4),
        ((*BASE, "metadata:", "  a:", "    x: 1", "  b:", "      y: 2"), 8),
    ],
    ids=[
        *("indent", "tab", "colon", "unclosed-double", "unclosed-single", "bell", "document"),
        *("list-key", "inconsistent-indentation"),
    ],
)
def test_yaml_errors_name_the_skill_md_line(lines, line):
    error = refusal(doc(*lines))
    assert (error.rule, error.line) == ("invalid_yaml", line)
    assert f"(line {line})" in str(error)


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ("license: !!int zz", 4),
        ("license: !!str MIT", 4),
        ("license: !!python/object:os.system x", 4),
        ("license: !custom maybe", 4),
        ("license: ! zz", 4),
        ("metadata:\n  k: v\n  x: !!set a", 6),  # inside a mapping: its own line
        ("metadata: !!map\n  k: v", 4),
    ],
)
def test_tags_are_refused_on_their_line(value, line):
    error = refusal(doc(*BASE, *value.split("\n")))
    assert (error.rule, error.line) == ("yaml_tag", line)
    assert "zz" not in str(error)  # no content quoted
    assert "maybe" not in str(error)


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ("license: [MIT]", 4),
        ("metadata: {owner: team}", 4),
        ("metadata:\n  k: v\n  x: {}", 6),
        ("metadata:\n  k: []", 5),
        ("allowed-tools:\n  - [Read, Bash]", 5),
    ],
)
def test_flow_style_is_refused_on_its_line(value, line):
    error = refusal(doc(*BASE, *value.split("\n")))
    assert (error.rule, error.line) == ("yaml_flow_style", line)
    assert "quote the value" in error.detail


def test_flow_indicators_inside_text_are_text():
    front = parse_skill_md(
        doc(f"name: {SLUG}", "description: 'Reads [tables] and {braces}.'", "license: a[b]"),
        SLUG,
    )
    assert (front.description, front.license) == ("Reads [tables] and {braces}.", "a[b]")


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
    block = [*BASE, "l0: &a0", *(["  - lol"] * 9), "l1:", *(["  - *a0"] * 9)]
    assert (refusal(doc(*block)).rule, refusal(doc(*block)).line) == ("yaml_alias", 4)


@pytest.mark.parametrize(
    "lines",
    [
        (*BASE, "license: &x MIT"),
        (f"name: &n {SLUG}", "description: *n"),
        (*BASE, "metadata: &m {a: b}"),
        (*BASE, "metadata: &m", "  a: b"),
        (*BASE, "license: *undefined"),
    ],
)
def test_anchors_and_aliases_are_refused(lines):
    assert refusal(doc(*lines)).rule == "yaml_alias"


def test_merge_keys_are_refused():
    error = refusal(doc(*BASE, "metadata:", "  <<: {a: b}"))
    assert (error.rule, error.line) == ("yaml_merge_key", 5)
    # Without anchors, a merge key can only take a mapping written in place, which
    # strictyaml would merge, hiding a duplicate of `a`.
    error = refusal(doc(*BASE, "metadata:", "  a: x", "  <<:", "    a: y"))
    assert (error.rule, error.line) == ("yaml_merge_key", 6)


def test_a_quoted_merge_key_is_a_key_like_any_other():
    front = parse_skill_md(doc(*BASE, "metadata:", "  '<<': text", "  k: <<"), SLUG)
    assert dict(front.metadata) == {"<<": "text", "k": "<<"}


@pytest.mark.parametrize(
    ("lines", "line"),
    [
        ((*BASE, f"name: {SLUG}"), 4),
        ((*BASE, "'description': again"), 4),
        ((*BASE, "metadata:", "  k: v", "  k: w"), 6),
        ((*BASE, "metadata:", "  '1': v", "  1: w"), 6),  # both are the text 1
        ((*BASE, "metadata:", "  k:", "    a: 1", "    a: 2"), 7),
    ],
)
def test_duplicate_keys_are_refused(lines, line):
    error = refusal(doc(*lines))
    assert (error.rule, error.line) == ("yaml_duplicate_key", line)


@pytest.mark.parametrize(
    "lines",
    [
        ("metadata:", "  " + "- " * 30_000 + "x"),  # compact nested lists, one line
        ("metadata:", *(" " * (i + 2) + "k:" for i in range(100)), " " * 103 + "v"),
    ],
    ids=["compact-lists", "indented-mappings"],
)
def test_deep_nesting_is_refused_without_recursion(lines):
    error = refusal(doc(*BASE, *lines))
    assert (error.rule, error.line) == ("yaml_too_deep", 5 if len(lines) == 2 else 19)
    assert parse_skill_md(doc(*BASE), SLUG)  # the loader left no state behind


def test_sixteen_levels_are_accepted_up_to_the_field_rules():
    nested = [" " * (2 * i) + "k:" for i in range(1, 15)]
    error = refusal(doc(*BASE, "metadata:", *nested, " " * 30 + "v"))
    assert error.rule == "invalid_metadata"  # read whole; the field's rule refuses it
    deeper = [" " * (2 * i) + "k:" for i in range(1, 16)]
    assert refusal(doc(*BASE, "metadata:", *deeper, " " * 32 + "v")).rule == "yaml_too_deep"


def test_the_number_of_nodes_is_bounded():
    entries = [f"  k{i}: v" for i in range(MAX_YAML_NODES // 2 - 4)]
    front = parse_skill_md(doc(*BASE, "metadata:", *entries), SLUG)
    assert len(front.metadata) == len(entries)
    entries.append("  one: more")
    error = refusal(doc(*BASE, "metadata:", *entries))
    assert (error.rule, error.line) == ("yaml_too_many_nodes", 5 + len(entries) - 1)


@pytest.mark.parametrize(
    ("frontmatter", "kind"),
    [
        (b"- a\n- b\n", "a list"),
        (b"just a string\n", "text"),
        (b"42\n", "text"),
        (b"", "empty"),
        (b"# only a comment\n", "empty"),
    ],
)
def test_frontmatter_must_be_a_mapping(frontmatter, kind):
    error = refusal(b"---\n" + frontmatter + b"---\n")
    assert error.rule == "not_a_mapping"
    assert error.detail == f"the frontmatter is {kind}, not a mapping"


# ---------------------------------------------------------------- fields


@pytest.mark.parametrize(
    ("extra", "key"),
    [("version: 1.0", "version"), ("Name: x", "Name"), ("allowed_tools: Read", "allowed_tools")],
)
def test_unknown_fields_are_refused_by_name(extra, key):
    error = refusal(doc(*BASE, extra))
    assert (error.rule, error.line) == ("unknown_field", 4)
    assert repr(key) in error.detail


def test_keys_are_text():
    assert refusal(doc(*BASE, "1: one")).detail.startswith("unknown field '1';")


@pytest.mark.parametrize(
    ("lines", "rule", "line"),
    [
        (("description: d",), "missing_name", None),
        (("name: 42", "description: d"), "name_mismatch", 2),  # the text 42, a valid slug
        (("name:", "description: d"), "invalid_name", 2),
        (("name:", "  - a", "description: d"), "invalid_name", 2),
        (("name: PDF-Report", "description: d"), "invalid_name", 2),
        (("name: pdf--report", "description: d"), "invalid_name", 2),
        (("name: -pdf", "description: d"), "invalid_name", 2),
        (("name: " + "a" * 65, "description: d"), "invalid_name", 2),
        (("description: d", "name: other-skill"), "name_mismatch", 3),
        ((f"name: {SLUG}",), "missing_description", None),
        ((f"name: {SLUG}", "description:"), "invalid_description", 3),
        ((f"name: {SLUG}", "description: ''"), "invalid_description", 3),
        ((f"name: {SLUG}", "description: '   '"), "invalid_description", 3),
        ((f"name: {SLUG}", "description:", "  - a", "  - b"), "invalid_description", 3),
        ((f"name: {SLUG}", "description:", "  a: b"), "invalid_description", 3),
        ((f"name: {SLUG}", "description: " + "d" * 1025), "invalid_description", 3),
        ((*BASE, "license:", "  - MIT"), "invalid_license", 4),
        ((*BASE, "compatibility: " + "c" * 501), "invalid_compatibility", 4),
        ((*BASE, "compatibility: ' '"), "invalid_compatibility", 4),
        ((*BASE, "compatibility:", "  a: b"), "invalid_compatibility", 4),
        ((*BASE, "metadata: a string"), "invalid_metadata", 4),
        ((*BASE, "metadata: ~"), "invalid_metadata", 4),  # the text ~, no mapping
        ((*BASE, "metadata:", "  - a", "  - b"), "invalid_metadata", 4),
        ((*BASE, "metadata:", "  nested:", "    a: b"), "invalid_metadata", 4),
        ((*BASE, "metadata:", "  list:", "    - a"), "invalid_metadata", 4),
        ((*BASE, "allowed-tools:", "  - Read", "  - Bash"), "invalid_allowed_tools", 4),
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
    padded = doc(*BASE, "metadata:", *(f"  k{i}: {'v' * 300}" for i in range(55)))
    assert len(padded) > LOADED_CACHE_CHARS
    parse_skill_md(padded, SLUG)
    parse_skill_md(padded, SLUG)
    assert len(loads) == 2
    parse_skill_md(short, SLUG)
    parse_skill_md(short, SLUG)
    assert len(loads) == 3
