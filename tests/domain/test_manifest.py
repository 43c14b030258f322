import pytest
from blake3 import blake3
from hypothesis import given
from hypothesis import strategies as st

from registry.domain.manifest import (
    MANIFEST_MAGIC,
    Manifest,
    ManifestDiff,
    ManifestEntry,
    build_manifest,
    file_digest,
)
from registry.domain.model import PackageFile

# The worked example of docs/package-format.md. These literals pin the canonical encoding:
# if this test fails, every stored manifest hash has changed meaning. Do not update the
# literals; add a new encoding version instead.
PINNED_FILES = {
    "SKILL.md": PackageFile(
        b"---\nname: pdf-report\ndescription: Makes PDF reports from tables.\n---\n# PDF report\n"
    ),
    "scripts/run.py": PackageFile(b"print('report')\n", executable=True),
    "references/guide.md": PackageFile(b"# Guide\n"),
}
PINNED_BYTES = (
    b"skillreg-manifest-v1\n"
    b"SKILL.md\x00"
    b"7e61f04f0fdfa4ebf76873f08cf7574a1234460e6185d5c426aa6be3722a8fa4\x0082\x00-\n"
    b"references/guide.md\x00"
    b"4ee2a22dea78fbe04cbc1eeb7007393299691b70f54aee255213753965d0ffd7\x008\x00-\n"
    b"scripts/run.py\x00"
    b"d9c6bd1e6d482f29e87c98f6cc780023c0a5f4376391ae0f1fcbc72429e85af7\x0016\x00x\n"
)
PINNED_HASH = "5cd116e72ab40d25762e495030ab0c9afe548baf844d672716a7a1d1a6044960"
EMPTY_HASH = "709bbb8ef58e0c6c8e1e04812d1caac777ee22b9c0e1e3d73e1e508e19ddb642"


def entry(path="a", data=b"", executable=False):
    return ManifestEntry(path, file_digest(data), len(data), executable)


def test_pinned_canonical_encoding_and_hash():
    manifest = build_manifest(PINNED_FILES)
    assert manifest.canonical_bytes() == PINNED_BYTES
    assert manifest.hash == PINNED_HASH
    assert blake3(PINNED_BYTES).hexdigest() == PINNED_HASH  # independent of Manifest's code


def test_empty_manifest():
    empty = Manifest()
    assert empty.canonical_bytes() == MANIFEST_MAGIC
    assert empty.hash == EMPTY_HASH
    assert (empty.file_count, empty.total_size, len(empty)) == (0, 0, 0)


def test_file_digest_is_blake3_hex():
    assert file_digest(b"") == "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
    assert file_digest(b"abc") == blake3(b"abc").hexdigest()


def test_entries_sort_by_utf8_bytes():
    paths = ["b", "a/b", "Z", "\u00e9", "\uff21", "\U0001f600", "a", "a-b", "a/a"]
    manifest = Manifest(entry(p) for p in paths)
    expected = sorted(paths, key=lambda p: p.encode("utf-8"))
    assert manifest.paths == expected
    # UTF-16 order would put the emoji (a surrogate pair) before the fullwidth A
    assert manifest.paths.index("\uff21") < manifest.paths.index("\U0001f600")
    assert [e.path for e in manifest.entries] == expected


def test_accessors():
    manifest = build_manifest(PINNED_FILES)
    assert manifest.file_count == 3
    assert manifest.total_size == 82 + 8 + 16
    assert manifest["scripts/run.py"].executable
    assert manifest.get("missing") is None
    assert "SKILL.md" in manifest
    assert "missing" not in manifest
    with pytest.raises(KeyError):
        manifest["missing"]
    assert list(manifest) == list(manifest.entries)
    assert manifest == build_manifest(dict(reversed(PINNED_FILES.items())))
    assert len({manifest, build_manifest(PINNED_FILES)}) == 1
    assert PINNED_HASH[:16] in repr(manifest)


def test_duplicate_paths_are_refused():
    with pytest.raises(ValueError, match="duplicate"):
        Manifest([entry("a", b"1"), entry("a", b"2")])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"path": ""},
        {"path": "a\x00b"},
        {"path": "\ud800"},
        {"digest": "A" * 64},
        {"digest": "a" * 63},
        {"digest": "../" + "a" * 61},
        {"size": -1},
    ],
)
def test_entry_validation(kwargs):
    fields = {"path": "a", "digest": "a" * 64, "size": 0} | kwargs
    with pytest.raises(ValueError):
        ManifestEntry(**fields)


def test_diff():
    old = Manifest(
        [
            entry("same", b"1"),
            entry("edited", b"old"),
            entry("chmod", b"x"),
            entry("gone", b"bye"),
        ]
    )
    new = Manifest(
        [
            entry("same", b"1"),
            entry("edited", b"new"),
            entry("chmod", b"x", executable=True),
            entry("fresh", b"hi"),
        ]
    )
    assert old.diff(new) == ManifestDiff(
        added=["fresh"], changed=["chmod", "edited"], removed=["gone"], unchanged=["same"]
    )
    assert new.diff(old) == ManifestDiff(
        added=["gone"], changed=["chmod", "edited"], removed=["fresh"], unchanged=["same"]
    )
    assert not old.diff(new).is_empty
    assert old.diff(old).is_empty
    assert Manifest().diff(old).added == sorted(old.paths)


# ---------------------------------------------------------------- properties

_ENTRIES = st.dictionaries(
    st.text(st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), min_size=1),
    st.tuples(st.binary(max_size=8), st.booleans()),
    max_size=8,
).map(lambda files: [entry(p, data, x) for p, (data, x) in files.items()])


@given(_ENTRIES, st.randoms())
def test_hash_does_not_depend_on_input_order(entries, random):
    shuffled = list(entries)
    random.shuffle(shuffled)
    assert Manifest(entries).hash == Manifest(shuffled).hash


@given(_ENTRIES.filter(bool), st.data())
def test_hash_changes_when_any_field_changes(entries, data):
    index = data.draw(st.integers(0, len(entries) - 1))
    original = entries[index]
    field = data.draw(st.sampled_from(["path", "digest", "size", "executable"]))
    taken = {e.path for e in entries}
    changed = {
        "path": ManifestEntry(
            data.draw(
                st.text(min_size=1).filter(
                    lambda p: p not in taken and "\x00" not in p and p.isprintable()
                )
            ),
            original.digest,
            original.size,
            original.executable,
        ),
        "digest": ManifestEntry(
            original.path,
            blake3(original.digest.encode()).hexdigest(),
            original.size,
            original.executable,
        ),
        "size": ManifestEntry(
            original.path, original.digest, original.size + 1, original.executable
        ),
        "executable": ManifestEntry(
            original.path, original.digest, original.size, not original.executable
        ),
    }[field]
    mutated = [*entries[:index], changed, *entries[index + 1 :]]
    assert Manifest(mutated).hash != Manifest(entries).hash


@given(_ENTRIES, _ENTRIES)
def test_encoding_is_injective(a, b):
    if Manifest(a) != Manifest(b):
        assert Manifest(a).canonical_bytes() != Manifest(b).canonical_bytes()
