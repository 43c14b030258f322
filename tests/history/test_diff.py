"""Diffs between versions: file status, sizes, digests, bounded previews, binary files."""

from __future__ import annotations

from registry import PackageFile
from registry.domain.manifest import file_digest
from registry.domain.textdiff import PREVIEW_LINES
from tests.support.packages import SLUG, skill_md
from tests.support.scopes import ACME

LONG_OLD = "".join(f"line {i}\n" for i in range(100))
LONG_NEW = "".join(f"line {i}{' changed' if i % 3 == 0 else ''}\n" for i in range(100))


async def two_versions(registry):
    one = {
        "SKILL.md": skill_md(SLUG),
        "notes.md": b"alpha\nbeta\ngamma\n",
        "long.md": LONG_OLD.encode(),
        "gone.md": b"bye\n",
        "image.png": b"\x89PNG\r\n\x1a\n\0\0\0binary",
        "run.sh": PackageFile(b"echo hi\n", executable=False),
    }
    two = {
        "SKILL.md": skill_md(SLUG),
        "notes.md": b"alpha\nBETA\ngamma\n",
        "long.md": LONG_NEW.encode(),
        "new.md": b"hello\n",
        "image.png": b"\x89PNG\r\n\x1a\n\0\0\0binary!",
        "run.sh": PackageFile(b"echo hi\n", executable=True),
    }
    await registry.write_package(ACME, SLUG, one, expected_head=None, actor="u")
    await registry.write_package(ACME, SLUG, two, expected_head=1, actor="u")
    return one, two


async def test_diff_reports_added_changed_and_removed_files(registry):
    _, two = await two_versions(registry)
    diff = await registry.diff(ACME, SLUG, 1, 2)
    assert (diff.a.kind, diff.a.id, diff.b.id) == ("version", 1, 2)
    by_path = {f.path: f for f in diff.files}
    assert {p: f.status for p, f in by_path.items()} == {
        "gone.md": "removed",
        "image.png": "changed",
        "long.md": "changed",
        "new.md": "added",
        "notes.md": "changed",
        "run.sh": "changed",
    }
    notes = by_path["notes.md"]
    assert (notes.old_size, notes.new_size) == (17, 17)
    assert notes.new_digest == file_digest(two["notes.md"])
    assert notes.lines == ["@@ -1,3 +1,3 @@", " alpha", "-beta", "+BETA", " gamma"]
    assert not notes.truncated
    assert by_path["new.md"].lines == ["@@ -0,0 +1 @@", "+hello"]
    assert by_path["gone.md"].lines == ["@@ -1 +0,0 @@", "-bye"]
    image = by_path["image.png"]
    assert (image.binary, image.lines) == (True, [])
    mode = by_path["run.sh"]
    assert (mode.old_executable, mode.new_executable, mode.lines) == (False, True, [])


async def test_previews_are_bounded_with_a_marker_and_the_full_diff_on_request(registry):
    await two_versions(registry)
    preview = {f.path: f for f in (await registry.diff(ACME, SLUG, 1, 2)).files}["long.md"]
    assert len(preview.lines) == PREVIEW_LINES
    assert preview.truncated
    full = {f.path: f for f in (await registry.diff(ACME, SLUG, 1, 2, full=True)).files}["long.md"]
    assert not full.truncated
    assert len(full.lines) == len(preview.lines) + preview.omitted
    assert sum(1 for line in full.lines if line.startswith("+")) == 34


async def test_a_version_against_itself_is_identical(registry):
    await two_versions(registry)
    assert (await registry.diff(ACME, SLUG, 2, 2)).identical
