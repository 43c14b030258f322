"""The reproducible zip of registry/domain/ziparchive.py.

Same files, same bytes, whatever the order they come in; readable by Python's zipfile and
by the registry's own archive reader (the marketplace import), which gives back exactly
the package, executable bits included; every entry a regular file under the root.
"""

from __future__ import annotations

import hashlib
import io
import stat
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.domain.archive import read_archive
from registry.domain.model import PackageFile
from registry.domain.ziparchive import FORMAT, MAX_ENTRIES, zip_package

PACKAGE = {
    "SKILL.md": PackageFile(
        b"---\nname: pdf-report\ndescription: Makes PDF reports.\n---\n# PDF\n"
    ),
    "scripts/run.py": PackageFile(b"print('report')\n", executable=True),
    "references/guide.md": PackageFile(b"# Guide\n"),
    "references/caf\u00e9 notes.md": PackageFile("d\u00e9j\u00e0 vu\n".encode()),
    "assets/empty.txt": PackageFile(b""),
}
# Pinned: if this changes, every digest a discovery index published for a zip has changed
# meaning. Do not update it; give the new layout a new FORMAT name instead.
PINNED_SHA256 = "5388fea3ee8b1403afe92b7e3a57a86ea3508bd8fc0a0e424d0b050cb4811a45"


def test_the_layout_is_pinned():
    assert FORMAT == "zip-v1"
    assert hashlib.sha256(zip_package(PACKAGE)).hexdigest() == PINNED_SHA256


def test_the_same_files_in_any_order_give_the_same_bytes():
    reordered = dict(reversed(list(PACKAGE.items())))
    assert zip_package(reordered) == zip_package(PACKAGE)


def test_every_entry_is_a_stored_regular_file_at_its_package_path():
    with zipfile.ZipFile(io.BytesIO(zip_package(PACKAGE))) as archive:
        assert archive.testzip() is None
        infos = archive.infolist()
        assert [i.filename for i in infos] == sorted(PACKAGE, key=lambda p: p.encode())
        for info in infos:
            mode = info.external_attr >> 16
            assert stat.S_ISREG(mode)
            assert info.create_system == 3  # Unix: the mode is meaningful
            assert info.compress_type == zipfile.ZIP_STORED
            assert info.flag_bits & 0x800  # UTF-8 names
            assert info.date_time == (1980, 1, 1, 0, 0, 0)
            assert bool(mode & 0o111) == PACKAGE[info.filename].executable
            assert archive.read(info) == PACKAGE[info.filename].data


def test_the_registry_archive_reader_gives_back_the_package():
    contents = read_archive(zip_package(PACKAGE))
    assert contents.format == "zip"
    assert contents.stripped is None  # the root is the skill folder: nothing to strip
    assert contents.files == PACKAGE


_SEGMENT = st.text(
    alphabet=st.sampled_from("abcXYZ019-_. \u00e9\u65e5"), min_size=1, max_size=12
).filter(lambda s: s.strip(" .") != "" and s not in (".", ".."))
_PATHS = st.lists(_SEGMENT, min_size=1, max_size=4).map("/".join)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        _PATHS,
        st.builds(PackageFile, st.binary(max_size=300), st.booleans()),
        min_size=1,
        max_size=12,
    )
)
def test_round_trip_through_the_reader(files):
    # A file may not also be a directory of another (the package validator's rule).
    paths = set(files)
    if any(p.startswith(q + "/") for p in paths for q in paths):
        return
    package = {"SKILL.md": PackageFile(b"---\nname: x\ndescription: y\n---\n"), **files}
    data = zip_package(package)
    assert zip_package(dict(reversed(list(package.items())))) == data
    assert read_archive(data).files == package


def test_a_zip_without_zip64_refuses_more_entries_than_it_can_count():
    files = {f"f{i}": PackageFile(b"") for i in range(MAX_ENTRIES + 1)}
    with pytest.raises(ValueError, match="zip64"):
        zip_package(files)
