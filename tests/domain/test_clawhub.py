"""What the ClawHub-compatible API must compute exactly as the `clawhub` client does.

The expected values were computed with the client's own code on Node 22
(`localeCompare`, and `buildSkillFingerprint` of clawhub 0.23.3's `skills.js`).
"""

from __future__ import annotations

import hashlib

import pytest

from registry.domain import clawhub
from registry.domain.model import PackageFile

# [...paths].sort((a, b) => a.localeCompare(b)) on Node 22.
LOCALE_ORDER = [
    "_x",
    "-x",
    "10.txt",
    "9.txt",
    "a-b",
    "a.b",
    "a/b",
    "a1",
    "ab",
    "aB",
    "Ab",
    "assets/deep/data.json",
    "readme.md",
    "README.md",
    "references/a.md",
    "scripts_2/x",
    "scripts-2/x",
    "Scripts/b.py",
    "scripts/run.py",
    "SKILL.md",
    "z.txt",
]


def test_paths_sort_as_locale_compare_sorts_them():
    shuffled = sorted(LOCALE_ORDER, key=lambda p: hashlib.sha256(p.encode()).digest())
    assert sorted(shuffled, key=clawhub.collation_key) == LOCALE_ORDER
    assert sorted(LOCALE_ORDER) != LOCALE_ORDER  # code point order would be wrong


def test_the_fingerprint_is_the_clients():
    files = {
        "SKILL.md": PackageFile(b"a"),
        "scripts/run.py": PackageFile(b"b"),
        ".hidden/ignored": PackageFile(b"never read by the client"),
    }
    assert clawhub.package_fingerprint(files) == (
        "0468665b0ca8f41612d8d0add93cacfac438e006d4865b388c323934adef6e65"
    )


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("1.0.0", 1),
        ("12.0.0", 12),
        (" 3.0.0 ", 3),
        ("1.0.1", None),
        ("0.0.0", None),
        ("01.0.0", None),
        ("1.0", None),
        ("latest", None),
        ("1.0.0-rc.1", None),
    ],
)
def test_only_n_0_0_names_version_n(text, number):
    assert clawhub.version_of(text) == number
    if number is not None:
        assert clawhub.semver_of(number) == text.strip()


@pytest.mark.parametrize(
    ("text", "triple"),
    [
        ("1.0.1", (1, 0, 1)),
        ("2.10.3+build.5", (2, 10, 3)),
        ("1.0.0-rc.1", None),
        ("1.0", None),
        ("v1.0.0", None),
        ("01.0.0", None),
    ],
)
def test_a_publish_names_a_release_semver(text, triple):
    assert clawhub.semver_triple(text) == triple
