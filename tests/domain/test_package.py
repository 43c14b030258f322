import pytest

from registry.domain.limits import Limits
from registry.domain.model import PackageFile
from registry.domain.package import ValidatedPackage, validate_package
from registry.errors import FrontmatterInvalid, InvalidName, LimitExceeded, PathRejected
from tests.corpus import fakes

SLUG = "pdf-report"
SKILL_MD = f"---\nname: {SLUG}\ndescription: Makes PDF reports.\n---\n# PDF\n".encode()
LIMITS = Limits(max_files=5, max_file_bytes=200, max_package_bytes=500, max_depth=3)


def package(extra=None):
    # A dict, not keyword arguments: Python NFKC-normalises identifiers, which would merge
    # the very spellings some tests keep apart.
    return {"SKILL.md": SKILL_MD, **(extra or {})}


def test_valid_package_is_returned_normalised():
    files = {
        "SKILL.md": SKILL_MD,
        "scripts/run.py": PackageFile(b"print(1)\n", executable=True),
        "references/cafe\u0301.md": b"# caf\xc3\xa9\n",
    }
    result = validate_package(files, SLUG, LIMITS)
    assert isinstance(result, ValidatedPackage)
    assert result.files == {
        "SKILL.md": PackageFile(SKILL_MD),
        "scripts/run.py": PackageFile(b"print(1)\n", executable=True),
        "references/caf\u00e9.md": PackageFile(b"# caf\xc3\xa9\n"),
    }
    assert result.frontmatter.name == SLUG
    assert result.frontmatter.body == "# PDF\n"
    assert result.total_size == sum(len(f.data) for f in result.files.values())
    assert "references/cafe\u0301.md" in files  # the input is left as it was


def test_bytearray_and_memoryview_inputs():
    files = {"SKILL.md": bytearray(SKILL_MD), "a.bin": memoryview(b"\x00\x01")}
    result = validate_package(files, SLUG, LIMITS)
    assert result.files["a.bin"] == PackageFile(b"\x00\x01")


def test_slug_is_checked_first():
    too_many = {f"f{i}": b"" for i in range(10)}
    with pytest.raises(InvalidName):
        validate_package(too_many, "Bad Slug", LIMITS)


def test_file_count_boundary_and_order():
    at_limit = package({f"f{i}": b"" for i in range(LIMITS.max_files - 1)})
    validate_package(at_limit, SLUG, LIMITS)
    over = {**at_limit, "../bad": b""}
    with pytest.raises(LimitExceeded) as info:
        validate_package(over, SLUG, LIMITS)
    assert (info.value.rule, info.value.limit, info.value.actual) == ("max_files", 5, 6)


def test_paths_are_checked_before_sizes():
    with pytest.raises(PathRejected) as info:
        validate_package(package({"../big": b"x" * 1000}), SLUG, LIMITS)
    assert info.value.rule == "dot_segment"


def test_raw_paths_normalising_alike_are_duplicates():
    files = package({"caf\u00e9": b"1", "cafe\u0301": b"2"})
    with pytest.raises(PathRejected) as info:
        validate_package(files, SLUG, LIMITS)
    assert info.value.rule == "duplicate_path"


def test_path_set_errors_name_the_raw_path():
    files = package({"Cafe\u0301/a": b"1", "caf\u00e9/b": b"2"})
    with pytest.raises(PathRejected) as info:
        validate_package(files, SLUG, LIMITS)
    assert info.value.rule == "case_collision"
    assert info.value.path in {"Cafe\u0301/a", "caf\u00e9/b"}


def test_file_size_boundary_names_the_raw_path():
    validate_package(package({"ok": b"x" * 200}), SLUG, LIMITS)
    with pytest.raises(LimitExceeded) as info:
        validate_package(package({"cafe\u0301": b"x" * 201}), SLUG, LIMITS)
    error = info.value
    assert (error.rule, error.limit, error.actual, error.path) == (
        "max_file_bytes",
        200,
        201,
        "cafe\u0301",
    )


def test_package_size_boundary():
    room = 500 - len(SKILL_MD)
    files = {"a": b"x" * 200, "b": b"x" * 200, "c": b"x" * (room - 400)}
    validate_package(package(files), SLUG, LIMITS)
    with pytest.raises(LimitExceeded) as info:
        validate_package(package({**files, "c": files["c"] + b"x"}), SLUG, LIMITS)
    assert (info.value.rule, info.value.actual, info.value.path) == ("max_package_bytes", 501, None)


def test_per_file_size_is_checked_before_the_total():
    files = package({"a": b"x" * 150, "b": b"x" * 150, "c": b"x" * 201})
    with pytest.raises(LimitExceeded) as info:
        validate_package(files, SLUG, LIMITS)
    assert info.value.rule == "max_file_bytes"


def test_sizes_are_checked_before_the_frontmatter():
    with pytest.raises(LimitExceeded):
        validate_package({"SKILL.md": b"not frontmatter", "big": b"x" * 201}, SLUG, LIMITS)


@pytest.mark.parametrize(
    ("files", "hint"),
    [
        ({}, False),
        ({"README.md": b"# hi"}, False),
        ({"skill.md": SKILL_MD}, True),
        ({"Skill.md": SKILL_MD}, True),
        ({"docs/other.md": SKILL_MD}, False),
    ],
)
def test_root_skill_md_is_required_in_exact_case(files, hint):
    with pytest.raises(FrontmatterInvalid) as info:
        validate_package(files, SLUG, LIMITS)
    assert info.value.rule == "missing_skill_md"
    assert ("case-sensitive" in info.value.detail) is hint


def test_skill_md_directory_conflicts_with_the_file():
    with pytest.raises(PathRejected) as info:
        validate_package(package({"SKILL.md/x": b""}), SLUG, LIMITS)
    assert info.value.rule == "file_dir_conflict"


def test_frontmatter_is_validated_against_the_slug():
    with pytest.raises(FrontmatterInvalid) as info:
        validate_package(package(), "other-skill", LIMITS)
    assert info.value.rule == "name_mismatch"


def test_errors_do_not_depend_on_mapping_order():
    files = package({"/abs": b"", "../up": b"", "a\\b": b""})
    seen = set()
    for order in (files, dict(reversed(files.items()))):
        with pytest.raises(PathRejected) as info:
            validate_package(order, SLUG, LIMITS)
        seen.add((info.value.path, info.value.rule))
    assert seen == {("../up", "dot_segment")}


def test_validation_does_not_scan_content():
    files = package({"scripts/deploy.sh": f"T={fakes.GITHUB_TOKEN}\n".encode()})
    assert "scripts/deploy.sh" in validate_package(files, SLUG, LIMITS).files


def test_default_limits():
    limits = Limits()
    files = package({f"r/{i}.md": b"x" for i in range(99)})
    assert len(validate_package(files, SLUG, limits).files) == 100
    with pytest.raises(LimitExceeded):
        validate_package({**files, "one-more": b""}, SLUG, limits)
