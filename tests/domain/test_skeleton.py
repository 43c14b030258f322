"""Look-alike slugs: the skeleton, the confusables data it is built from, and its copy in 0013."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from registry.domain import skeleton as domain
from registry.domain.model import check_slug

MIGRATION = (
    Path(__file__).resolve().parents[2] / "migrations" / "versions" / "0013_slug_skeleton.py"
)
CYRILLIC_E = "\u0435"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("λόγος", "λόγοσ"),  # one word under case folding: one folder on macOS and Windows
        ("pdf-report", f"pdf-r{CYRILLIC_E}port"),
        ("skill-1", "skill-l"),
        ("modern", "rnodern"),  # `m` is `rn` in UTS #39
        ("straße", "strasse"),
    ],
)
def test_look_alike_slugs_share_a_skeleton(a, b):
    assert a != b
    check_slug(a)  # both are slugs the write path takes
    check_slug(b)
    assert domain.look_alike(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [("pdf-report", "pdf-reports"), ("café", "cafe"), ("λόγος", "λογος"), ("a", "b")],
)
def test_different_slugs_keep_different_skeletons(a, b):
    assert not domain.look_alike(a, b)


def test_the_installed_confusables_are_stars_around_their_prototypes():
    # The skeleton relies on it (registry/domain/skeleton.py): every class of Unicode's
    # confusables.txt is one prototype and the characters mapped to it. A release of the
    # data that breaks this would make the representatives ambiguous.
    links: dict[str, set[str]] = {}
    marks = str.maketrans("", "", "\u200e\u200f")
    for key, glyphs in domain.confusables.confusables_data.items():
        for glyph in glyphs:
            a, b = key.translate(marks), glyph["c"].translate(marks)
            if a and b and a != b:
                links.setdefault(a, set()).add(b)
                links.setdefault(b, set()).add(a)
    assert len(links) > 9000
    for node, others in links.items():
        if len(others) > 1:  # a prototype: each of its characters links to it alone
            assert all(links[o] == {node} for o in others), node


def test_migration_0013_computes_the_same_skeletons():
    spec = importlib.util.spec_from_file_location("migration_0013", MIGRATION)
    assert spec is not None
    assert spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    assert migration._table() == domain._table()
    for name in ("λόγος", f"pdf-r{CYRILLIC_E}port", "modern", "straße"):
        assert migration.skeleton(name) == domain.skeleton(name)
