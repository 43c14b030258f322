import posixpath
import unicodedata
from pathlib import PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registry.domain.limits import Limits
from registry.domain.paths import (
    PATH_RULES,
    check_path_set,
    check_stored_path,
    normalize_path,
    normalize_paths,
)
from registry.errors import PathRejected

LIMITS = Limits()


def rule_of(raw: str, limits: Limits = LIMITS) -> str:
    with pytest.raises(PathRejected) as info:
        normalize_path(raw, limits)
    assert info.value.path == raw
    return info.value.rule


# ---------------------------------------------------------------- accepted


@pytest.mark.parametrize(
    "raw",
    [
        "SKILL.md",
        "scripts/run.py",
        "references/deep/er/guide.md",
        ".hidden",
        ".github/workflows/ci.yml",
        "..foo",
        "foo..",
        "a b.txt",
        "caf\u00e9.md",
        "\u65e5\u672c\u8a9e/\u30d5\u30a1\u30a4\u30eb.txt",
        "emoji \U0001f600.md",
        "SKILL.md.bak",
        "scripts/SKILL.md.orig",
        "a:b.txt",
    ],
)
def test_accepts_ordinary_paths(raw):
    assert normalize_path(raw, LIMITS) == raw


def test_stores_the_nfc_form():
    assert normalize_path("cafe\u0301.md", LIMITS) == "caf\u00e9.md"
    assert normalize_path("A\u030a/x", LIMITS) == "\u00c5/x"


def test_depth_boundary():
    assert normalize_path("/".join("abcdefgh"), LIMITS) == "a/b/c/d/e/f/g/h"
    assert rule_of("/".join("abcdefghi")) == "too_deep"
    assert rule_of("a/b/c", Limits(max_depth=2)) == "too_deep"


def test_segment_length_is_counted_in_utf8_bytes():
    assert normalize_path("a" * 255, LIMITS) == "a" * 255
    assert rule_of("a" * 256) == "segment_too_long"
    assert normalize_path("\u00e9" * 127, LIMITS)  # 254 bytes
    assert rule_of("\u00e9" * 128) == "segment_too_long"  # 256 bytes in 128 characters
    # measured on the stored (NFC) form: 128 decomposed e-acute are 384 bytes raw, 256 NFC
    assert rule_of("e\u0301" * 128) == "segment_too_long"
    assert normalize_path("e\u0301" * 127, LIMITS) == "\u00e9" * 127


# ---------------------------------------------------------------- refused, one rule each


@pytest.mark.parametrize(
    ("raw", "rule"),
    [
        ("", "empty_path"),
        ("bad\udc80.txt", "invalid_unicode"),
        ("\ud800", "invalid_unicode"),
        ("a\x00b", "nul_byte"),
        ("a\nb", "control_character"),
        ("a\rb", "control_character"),
        ("a\tb", "control_character"),
        ("\x1b[31m", "control_character"),
        ("a\x7fb", "control_character"),
        ("a\x85b", "control_character"),
        ("a\x9fb", "control_character"),
        ("a\u2028b", "control_character"),
        ("a\u2029b", "control_character"),
        ("invoice\u202etxt.sh", "bidi_control"),
        ("a\u200fb", "bidi_control"),
        ("a\u2066b", "bidi_control"),
        ("/etc/passwd", "absolute_path"),
        ("/", "absolute_path"),
        ("a\\b", "backslash"),
        ("..\\evil", "backslash"),
        ("C:\\Windows", "backslash"),
        ("a//b", "empty_segment"),
        ("a/", "empty_segment"),
        ("a/ /b", "empty_segment"),
        (".", "dot_segment"),
        ("..", "dot_segment"),
        ("../x", "dot_segment"),
        ("a/../b", "dot_segment"),
        ("a/./b", "dot_segment"),
        ("a/..", "dot_segment"),
        ("...", "dot_segment"),
        ("a/. ./b", "dot_segment"),
        (".. /x", "dot_segment"),
        ("\uff0e\uff0e/x", "dot_segment"),
        ("\uff0e/x", "dot_segment"),
        ("\u2024\u2024/x", "dot_segment"),
        ("\u2025/x", "dot_segment"),
        (".\uff0e/x", "dot_segment"),
        ("\ufe52\ufe52/x", "dot_segment"),
        ("a\uff0fb", "separator_lookalike"),
        ("a\uff3cb", "separator_lookalike"),
        ("\uff0e\uff0e\uff0f\uff0e\uff0e", "separator_lookalike"),
        ("sub/SKILL.md", "nested_skill_md"),
        ("scripts/skill.md", "nested_skill_md"),
        ("a/b/Skill.MD", "nested_skill_md"),
        ("a/\uff33\uff2b\uff29\uff2c\uff2c.md", "nested_skill_md"),
        ("a/SKILL.md.", "nested_skill_md"),
    ],
)
def test_refuses(raw, rule):
    assert rule_of(raw) == rule


def test_every_rule_has_a_refusal_case():
    refused = {
        rule_of(raw)
        for raw in [
            *["", "\ud800", "\x00", "\n", "\u202e", "/", "\\", "a//b", "..", "\uff0f"],
            *["a/" * 8 + "a", "a" * 256, "a/SKILL.md"],
        ]
    }
    with pytest.raises(PathRejected) as dup:
        normalize_paths(["e\u0301", "\u00e9"], LIMITS)
    refused.add(dup.value.rule)
    for paths in (["a", "A"], ["a", "a/b"]):
        with pytest.raises(PathRejected) as info:
            check_path_set(paths)
        refused.add(info.value.rule)
    with pytest.raises(PathRejected) as stored:
        check_stored_path("e\u0301", LIMITS)
    refused.add(stored.value.rule)
    assert refused == set(PATH_RULES)


def test_error_is_repr_safe():
    error = PathRejected("a\x00\u202e\n", "nul_byte")
    assert "\x00" not in str(error)
    assert "\u202e" not in str(error)
    assert "\n" not in str(error)
    with pytest.raises(PathRejected) as info:
        normalize_path("x\udc80", LIMITS)
    str(info.value).encode("utf-8")  # printable and encodable: no lone surrogate in the text


# ---------------------------------------------------------------- sets of paths


def test_normalize_paths_maps_stored_to_raw():
    assert normalize_paths(["cafe\u0301.md", "SKILL.md"], LIMITS) == {
        "caf\u00e9.md": "cafe\u0301.md",
        "SKILL.md": "SKILL.md",
    }


def test_normalize_paths_refuses_nfc_duplicates_naming_the_raw_path():
    with pytest.raises(PathRejected) as info:
        normalize_paths(["caf\u00e9.md", "cafe\u0301.md"], LIMITS)
    assert info.value.rule == "duplicate_path"
    assert info.value.path in {"caf\u00e9.md", "cafe\u0301.md"}


def test_normalize_paths_reports_the_same_error_in_any_order():
    bad = ["z/../a", "/abs", "ok.md"]
    errors = set()
    for order in (bad, list(reversed(bad))):
        with pytest.raises(PathRejected) as info:
            normalize_paths(order, LIMITS)
        errors.add((info.value.path, info.value.rule))
    assert errors == {("/abs", "absolute_path")}


@pytest.mark.parametrize(
    "paths",
    [
        ["SKILL.md"],
        ["SKILL.md", "scripts/run.py", "scripts/lib/util.py", "references/a.md"],
        ["a/b", "a/c", "ab", "a.b"],
        ["x/y/z", "x/y2", "x2"],
        ["caf\u00e9", "cafe"],
    ],
)
def test_path_set_accepts(paths):
    check_path_set(paths)


@pytest.mark.parametrize(
    ("paths", "rule", "path"),
    [
        (["a", "a"], "duplicate_path", "a"),
        (["a", "a/b"], "file_dir_conflict", "a"),
        (["x/a", "x/a/b/c"], "file_dir_conflict", "x/a"),
        (["README.md", "readme.md"], "case_collision", "readme.md"),
        (["Scripts/a", "scripts/b"], "case_collision", "scripts/b"),
        (["deep/Dir/a", "deep/dir/b"], "case_collision", "deep/dir/b"),
        (["A", "a/b"], "case_collision", "a/b"),
        (["SKILL.md", "skill.md"], "case_collision", "skill.md"),
        (["STRASSE", "stra\u00dfe"], "case_collision", "stra\u00dfe"),
        (["\u00c5.md", "\u00e5.md"], "case_collision", "\u00e5.md"),
        (["K.md", "\u212a.md"], "case_collision", "\u212a.md"),  # Kelvin sign folds to k
        (["notes", "notes."], "case_collision", "notes."),  # Windows drops trailing dots
        (["dir /a", "dir/b"], "case_collision", "dir/b"),  # and trailing spaces
    ],
)
def test_path_set_refuses(paths, rule, path):
    for order in (paths, list(reversed(paths))):
        with pytest.raises(PathRejected) as info:
            check_path_set(order)
        assert (info.value.rule, info.value.path) == (rule, path)


def test_path_set_errors_name_the_raw_path():
    raw = {"readme.md": "given-readme", "README.md": "given-README"}
    with pytest.raises(PathRejected) as info:
        check_path_set(["readme.md", "README.md"], raw=raw)
    assert info.value.path == "given-readme"
    with pytest.raises(PathRejected) as info:
        check_path_set(["a", "a/b"], raw={"a": "raw-a"})
    assert info.value.path == "raw-a"


# ---------------------------------------------------------------- properties

_SEGMENT_CHARS = st.sampled_from(
    [*"abcXYZ.-_ ", "\\", "\x00", "\n", "\u0301", "\u00e9", "\uff0e", "\u2024", "\uff0f"]
)
_SEGMENTS = st.text(_SEGMENT_CHARS, min_size=0, max_size=6)
_PATHS = st.one_of(
    st.lists(_SEGMENTS, min_size=1, max_size=10).map("/".join),
    st.lists(_SEGMENTS, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts)),
    st.text(max_size=40),
)


@given(_PATHS)
def test_accepted_paths_stay_inside_the_root_and_are_stable(raw):
    outcome = _normalize_or_error(raw)
    if isinstance(outcome, PathRejected):
        assert outcome.rule in PATH_RULES
        assert outcome.path == raw
        return
    path = outcome
    root = PurePosixPath("/skill")
    for candidate in (path, unicodedata.normalize("NFKC", path)):
        joined = posixpath.normpath(str(root / candidate))
        assert joined.startswith("/skill/")
        assert PurePosixPath(joined).is_relative_to(root)
    assert unicodedata.is_normalized("NFC", path)
    assert normalize_path(path, LIMITS) == path
    assert normalize_path(unicodedata.normalize("NFD", raw), LIMITS) == path
    parts = path.split("/")
    assert len(parts) <= LIMITS.max_depth
    assert all(part not in {"", ".", ".."} for part in parts)
    assert "\\" not in path
    assert "\x00" not in path


@given(
    st.lists(
        st.lists(st.sampled_from(["a", "A", "b", "\u00e9", "E\u0301"]), min_size=1, max_size=3).map(
            "/".join
        ),
        max_size=6,
    )
)
def test_accepted_path_sets_never_collide_when_case_folded(raws):
    try:
        stored = normalize_paths(raws, LIMITS)
        check_path_set(stored)
    except PathRejected:
        return
    names = {prefix for p in stored for prefix in _prefixes(p)}
    folded = {unicodedata.normalize("NFC", name.casefold()) for name in names}
    assert len(folded) == len(names)
    files = set(stored)
    assert not any(prefix in files for p in files for prefix in _prefixes(p)[:-1])


def _normalize_or_error(raw):
    try:
        return normalize_path(raw, LIMITS)
    except PathRejected as error:
        return error


def _prefixes(path):
    parts = path.split("/")
    return ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]
