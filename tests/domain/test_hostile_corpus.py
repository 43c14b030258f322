"""Every hostile case is refused by the domain, with the expected class and rule."""

import pytest

from registry.domain.package import validate_package
from registry.domain.scanner import DefaultScanner, raise_for, scan_package
from registry.errors import ContentBlocked, LimitExceeded, PathRejected, RegistryError
from tests.corpus import fakes
from tests.corpus.hostile import CASES, CORPUS_LIMITS, SLUG, VALID_FILES, HostileCase


def check(files, slug):
    """What the write path does before storing anything: validate, then scan."""
    validated = validate_package(files, slug, CORPUS_LIMITS)
    raise_for(scan_package(DefaultScanner(), validated.files))
    return validated


def test_the_base_package_is_valid():
    assert check(VALID_FILES, SLUG).frontmatter.name == SLUG


def test_the_corpus_is_large_and_ids_are_unique():
    assert len(CASES) >= 45
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_case_is_refused(case: HostileCase):
    with pytest.raises(RegistryError) as info:
        check(case.files, case.slug)
    error = info.value
    assert type(error) is case.error, error
    assert case.matches(error), error.details()
    if case.rule is not None:
        assert case.rule in str(error)


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.error is ContentBlocked], ids=lambda c: c.id
)
def test_secret_cases_pass_validation_and_leak_nothing(case: HostileCase):
    validate_package(case.files, case.slug, CORPUS_LIMITS)
    with pytest.raises(ContentBlocked) as info:
        check(case.files, case.slug)
    text = f"{info.value} {info.value!r} {info.value.details()}"
    for secret in fakes.ALL.values():
        assert secret not in text


def test_matches_checks_class_rule_and_path():
    case = next(c for c in CASES if c.id == "file-too-large")
    assert case.matches(LimitExceeded("max_file_bytes", 1, 2, "assets/big.bin"))
    assert not case.matches(LimitExceeded("max_file_bytes", 1, 2, "other"))
    assert not case.matches(LimitExceeded("max_files", 1, 2, "assets/big.bin"))
    assert not case.matches(PathRejected("assets/big.bin", "max_file_bytes"))
