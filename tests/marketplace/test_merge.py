"""The three-way manifest merge (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from registry.domain.manifest import Manifest, ManifestEntry, file_digest
from registry.domain.merge import (
    BOTH_ADDED,
    BOTH_CHANGED,
    CHANGED_AND_REMOVED,
    PATH_COLLISION,
    merge_manifests,
)


def entry(path: str, content: str, *, executable: bool = False) -> ManifestEntry:
    data = content.encode()
    return ManifestEntry(path, file_digest(data), len(data), executable)


def manifest(**files: str) -> Manifest:
    return Manifest(
        entry(path.replace("__", "/").replace("_", "."), c) for path, c in files.items()
    )


BASE = manifest(SKILL_md="s1", a_md="a1", b_md="b1", c_md="c1")


def test_upstream_only_changes_are_taken_and_owner_only_changes_kept():
    ours = manifest(SKILL_md="s1", a_md="a-owner", b_md="b1", c_md="c1", mine_md="new")
    theirs = manifest(SKILL_md="s2", a_md="a1", b_md="b1", theirs_md="t")
    merge = merge_manifests(BASE, ours, theirs)
    assert merge.clean
    assert merge.manifest == manifest(
        SKILL_md="s2", a_md="a-owner", b_md="b1", mine_md="new", theirs_md="t"
    )
    assert merge.taken == ("SKILL.md", "c.md", "theirs.md")
    assert merge.kept == ("a.md", "mine.md")


def test_the_same_change_on_both_sides_is_no_conflict():
    same = manifest(SKILL_md="s2", a_md="a1", b_md="b1")
    merge = merge_manifests(BASE, same, same)
    assert merge.clean
    assert merge.manifest == same
    assert (merge.taken, merge.kept) == ((), ())


def test_conflicts_name_their_kind_and_take_upstream_by_default():
    ours = manifest(SKILL_md="s1", a_md="a-owner", c_md="c-owner", new_md="o")
    theirs = manifest(SKILL_md="s1", a_md="a-up", b_md="b-up", new_md="t")
    merge = merge_manifests(BASE, ours, theirs)
    assert {(c.path, c.kind) for c in merge.conflicts} == {
        ("a.md", BOTH_CHANGED),
        ("b.md", CHANGED_AND_REMOVED),  # owner removed, upstream changed
        ("c.md", CHANGED_AND_REMOVED),  # owner changed, upstream removed
        ("new.md", BOTH_ADDED),
    }
    assert merge.manifest == manifest(SKILL_md="s1", a_md="a-up", b_md="b-up", new_md="t")
    kept = merge_manifests(BASE, ours, theirs, prefer="ours")
    assert kept.manifest == ours


def test_a_mode_flip_against_an_edit_is_a_conflict():
    base = Manifest([entry("SKILL.md", "s"), entry("run.sh", "x")])
    ours = Manifest([entry("SKILL.md", "s"), entry("run.sh", "x", executable=True)])
    theirs = Manifest([entry("SKILL.md", "s"), entry("run.sh", "y")])
    assert [c.kind for c in merge_manifests(base, ours, theirs).conflicts] == [BOTH_CHANGED]


def test_paths_that_collide_as_a_set_are_a_conflict():
    ours = Manifest([*BASE, entry("notes.md", "owner")])
    theirs = Manifest([*BASE, entry("Notes.md", "upstream")])
    merge = merge_manifests(BASE, ours, theirs)
    assert [c.kind for c in merge.conflicts] == [PATH_COLLISION]
    assert merge.manifest == theirs


contents = st.sampled_from(["", "x", "y", "z"])
sides = st.dictionaries(st.sampled_from(["a.md", "b.md", "c/d.md"]), contents, max_size=3)


def build(files: dict[str, str]) -> Manifest:
    return Manifest([entry("SKILL.md", "s"), *(entry(p, c) for p, c in files.items())])


@given(sides, sides)
def test_merging_against_an_unchanged_side_gives_the_other_side(base, other):
    b, o = build(base), build(other)
    assert merge_manifests(b, b, o).manifest == o
    assert merge_manifests(b, o, b).manifest == o
    assert merge_manifests(b, o, o).manifest == o


@given(sides, sides, sides)
def test_conflicts_are_symmetric_and_every_path_is_accounted_for(base, ours, theirs):
    b, o, t = build(base), build(ours), build(theirs)
    one = merge_manifests(b, o, t)
    two = merge_manifests(b, t, o)
    assert one.conflicts == two.conflicts
    assert one.taken == two.kept
    if one.clean:
        assert one.manifest == two.manifest
