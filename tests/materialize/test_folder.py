"""Reading a skill folder into a package (`read_folder`), writing one out (`write_folder`).

A folder is input from outside, and it may change while it is read. Whatever it holds is
read whole into the package, skipped by an ignore rule, or refused with a typed error
naming the path and the rule: never a traceback, never a package with files missing.

How the failures that need another process or privileges are staged here:

- "cannot read" (`deny`): a real `chmod 000` where it stops a read. The suite runs as root
  on CI, where it stops nothing (root bypasses file permissions), so there the fixture
  makes the calls that open or list that one folder or file (`os.open`, `io.open`,
  `os.scandir`, matched by inode) fail with the `EACCES` the kernel would give.
- a link or a FIFO swapped in between the reader's check and its read (`stale_checks`):
  the entry is the link (or FIFO) on disk from the start, and every lookup by name
  (`os.lstat`, `Path.lstat`, `os.scandir`'s entries) reports the regular file it was a
  moment before. Only a read that asks the open descriptor can tell.
- a full disk part way through a write: the write runs in a child process whose file size
  limit (`RLIMIT_FSIZE`) is smaller than the package's second file, so the kernel refuses
  that write with `EFBIG` as it would refuse one with `ENOSPC`.
"""

from __future__ import annotations

import io
import os
import pathlib
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from registry.domain.limits import Limits
from registry.domain.model import PackageFile
from registry.errors import LimitExceeded, PathRejected
from registry.services.materialize.folder import read_folder, write_folder

SKILL_MD = b"---\nname: demo\ndescription: A demo skill.\n---\n# demo\n"
SECRET = b"the contents of a file outside the skill folder\n"


def make_skill(root: Path, files: dict[str, bytes] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, data in {"SKILL.md": SKILL_MD, **(files or {})}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


# ---------------------------------------------------------------- staging failures


def _permissions_bind(folder: Path) -> bool:
    """Whether `chmod 000` stops this process reading a file (not as root, as a rule)."""
    probe = folder / ".probe"
    probe.write_bytes(b"")
    probe.chmod(0)
    try:
        probe.read_bytes()
    except PermissionError:
        return True
    else:
        return False
    finally:
        probe.unlink()


class _Denied:
    """Open and list calls that fail with `EACCES` for one inode, as `chmod 000` would."""

    def __init__(self, path: Path) -> None:
        denied = path.stat(follow_symlinks=False)
        self.key = (denied.st_dev, denied.st_ino)
        self.real_open, self.real_io_open, self.real_scandir = os.open, io.open, os.scandir

    def hits(self, target: object, dir_fd: int | None = None) -> bool:
        try:
            if isinstance(target, int):
                found = os.fstat(target)
            else:
                found = os.stat(target, dir_fd=dir_fd, follow_symlinks=False)  # type: ignore[call-overload]
        except (OSError, TypeError, ValueError):
            return False
        return (found.st_dev, found.st_ino) == self.key

    def open(self, name, flags, mode=0o777, *, dir_fd=None):  # type: ignore[no-untyped-def]
        if self.hits(name, dir_fd):
            raise PermissionError(13, "Permission denied", str(name))
        return self.real_open(name, flags, mode, dir_fd=dir_fd)

    def io_open(self, file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(file, str | bytes | os.PathLike) and self.hits(file):
            raise PermissionError(13, "Permission denied", str(file))
        return self.real_io_open(file, *args, **kwargs)

    def scandir(self, target="."):  # type: ignore[no-untyped-def]
        if self.hits(target):
            raise PermissionError(13, "Permission denied", str(target))
        return self.real_scandir(target)


@pytest.fixture
def deny(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Make one folder or file unreadable (see the module docstring)."""
    real = _permissions_bind(tmp_path)
    restore: list[tuple[Path, int]] = []

    def apply(path: Path) -> None:
        if real:
            restore.append((path, path.stat().st_mode))
            path.chmod(0)
            return
        denied = _Denied(path)
        monkeypatch.setattr(os, "open", denied.open)
        monkeypatch.setattr(io, "open", denied.io_open)
        monkeypatch.setattr(os, "scandir", denied.scandir)

    yield apply
    for path, mode in restore:
        path.chmod(mode)


class _StaleEntry:
    """A directory entry that reports a regular file, whatever is on disk now."""

    def __init__(self, entry: os.DirEntry[str], decoy: os.stat_result) -> None:
        self._entry, self._decoy = entry, decoy
        self.name, self.path = entry.name, entry.path

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:  # noqa: ARG002
        return False

    def is_file(self, *, follow_symlinks: bool = True) -> bool:  # noqa: ARG002
        return True

    def is_symlink(self) -> bool:
        return False

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:  # noqa: ARG002
        return self._decoy

    def inode(self) -> int:
        return self._decoy.st_ino


class _StaleListing:
    def __init__(self, listing, name: str, decoy: os.stat_result) -> None:  # type: ignore[no-untyped-def]
        self._listing, self._name, self._decoy = listing, name, decoy

    def __iter__(self) -> _StaleListing:
        return self

    def __next__(self):  # type: ignore[no-untyped-def]
        entry = next(self._listing)
        return _StaleEntry(entry, self._decoy) if entry.name == self._name else entry

    def __enter__(self):  # type: ignore[no-untyped-def]
        return self

    def __exit__(self, *exc: object) -> None:
        self._listing.close()

    def close(self) -> None:
        self._listing.close()


@pytest.fixture
def stale_checks(monkeypatch: pytest.MonkeyPatch):
    """Every lookup by name of `path` reports `decoy`'s regular file (module docstring)."""

    def apply(path: Path, decoy: Path) -> None:
        decoy_stat = decoy.stat()
        real_lstat, real_scandir = os.lstat, os.scandir

        def fake_lstat(target, *, dir_fd=None):  # type: ignore[no-untyped-def]
            if dir_fd is None and Path(target) == path:
                return decoy_stat
            return real_lstat(target, dir_fd=dir_fd)

        def fake_path_lstat(self: Path) -> os.stat_result:
            return decoy_stat if self == path else real_lstat(self)

        def fake_scandir(target="."):  # type: ignore[no-untyped-def]
            return _StaleListing(real_scandir(target), path.name, decoy_stat)

        monkeypatch.setattr(os, "lstat", fake_lstat)
        monkeypatch.setattr(pathlib.Path, "lstat", fake_path_lstat)
        monkeypatch.setattr(os, "scandir", fake_scandir)

    return apply


# ---------------------------------------------------------------- reading


def test_a_folder_that_cannot_be_listed_is_refused_not_skipped(tmp_path, deny):
    root = make_skill(tmp_path / "demo", {"scripts/run.py": b"print(1)\n"})
    deny(root / "scripts")
    with pytest.raises(PathRejected) as caught:
        read_folder(root)
    assert (caught.value.path, caught.value.rule) == ("scripts", "unreadable")


def test_a_file_that_cannot_be_opened_is_refused_naming_it(tmp_path, deny):
    root = make_skill(tmp_path / "demo", {"scripts/run.py": b"print(1)\n"})
    deny(root / "scripts" / "run.py")
    with pytest.raises(PathRejected) as caught:
        read_folder(root)
    assert (caught.value.path, caught.value.rule) == ("scripts/run.py", "unreadable")
    assert "ermission denied" in str(caught.value)


def test_a_link_swapped_in_after_the_check_is_not_followed(tmp_path, stale_checks):
    root = make_skill(tmp_path / "demo")
    outside = tmp_path / "secret"
    outside.write_bytes(SECRET)
    decoy = tmp_path / "decoy"
    decoy.write_bytes(b"regular\n")
    (root / "data.txt").symlink_to(outside)
    stale_checks(root / "data.txt", decoy)
    with pytest.raises(PathRejected) as caught:
        read_folder(root)
    assert (caught.value.path, caught.value.rule) == ("data.txt", "symlink")


def test_a_fifo_swapped_in_after_the_check_is_refused_without_blocking(tmp_path, stale_checks):
    root = make_skill(tmp_path / "demo")
    decoy = tmp_path / "decoy"
    decoy.write_bytes(b"regular\n")
    fifo = root / "data.txt"
    os.mkfifo(fifo)
    stale_checks(fifo, decoy)
    outcome: list[BaseException | dict[str, PackageFile]] = []

    def read() -> None:
        try:
            outcome.append(read_folder(root))
        except BaseException as exc:  # handed to the test's thread
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():  # blocked opening the FIFO: a writer end releases it
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join()
        pytest.fail("reading the folder blocked on a FIFO")
    [result] = outcome
    assert isinstance(result, PathRejected), result
    assert (result.path, result.rule) == ("data.txt", "special_file")


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    root = make_skill(tmp_path / "demo")
    with (root / "huge.bin").open("wb") as huge:
        huge.truncate(3 * 1024**3)  # sparse: 3 GiB that take no disk and must take no memory
    read_sizes: list[int] = []
    real_read = os.read

    def counting_read(fd: int, size: int) -> bytes:
        data = real_read(fd, size)
        read_sizes.append(len(data))
        return data

    monkeypatch.setattr(os, "read", counting_read)
    with pytest.raises(LimitExceeded) as caught:
        read_folder(root, limits=Limits(max_file_bytes=1024))
    error = caught.value
    assert (error.rule, error.path, error.limit, error.actual) == (
        "max_file_bytes",
        "huge.bin",
        1024,
        3 * 1024**3,
    )
    assert sum(read_sizes) <= len(SKILL_MD)  # SKILL.md only: huge.bin was measured, not read


def test_a_file_that_grows_after_it_is_measured_is_read_to_the_limit_plus_one(
    tmp_path, monkeypatch
):
    root = make_skill(tmp_path / "demo")
    (root / "grows.txt").write_bytes(b"x" * 100_000)
    grown = (root / "grows.txt").stat()
    real_fstat, real_read = os.fstat, os.read
    read_from_grown: list[int] = []

    def measured_small(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        if info.st_ino != grown.st_ino:
            return info
        fields = list(info)
        fields[stat.ST_SIZE] = 10  # as it was when it was measured
        return os.stat_result(fields)

    def counting_read(fd: int, size: int) -> bytes:
        data = real_read(fd, size)
        if real_fstat(fd).st_ino == grown.st_ino:
            read_from_grown.append(len(data))
        return data

    monkeypatch.setattr(os, "fstat", measured_small)
    monkeypatch.setattr(os, "read", counting_read)
    with pytest.raises(LimitExceeded) as caught:
        read_folder(root, limits=Limits(max_file_bytes=1000))
    assert (caught.value.rule, caught.value.path) == ("max_file_bytes", "grows.txt")
    assert sum(read_from_grown) == 1001


def test_a_package_over_the_total_limit_is_refused_while_reading(tmp_path):
    root = make_skill(tmp_path / "demo", {f"part{i}.txt": b"y" * 600 for i in range(4)})
    with pytest.raises(LimitExceeded) as caught:
        read_folder(root, limits=Limits(max_file_bytes=1000, max_package_bytes=2000))
    assert (caught.value.rule, caught.value.limit) == ("max_package_bytes", 2000)


def test_1500_nested_folders_are_refused_as_too_deep(tmp_path, nested):
    root = make_skill(tmp_path / "demo")
    nested(root, "d", 1500)
    with pytest.raises(PathRejected) as caught:
        read_folder(root)
    assert caught.value.rule == "too_deep"
    assert caught.value.path == "/".join(["d"] * 9)  # the first folder past 8 segments


def test_long_names_nested_past_path_max_are_read_without_building_the_path(tmp_path, nested):
    root = make_skill(tmp_path / "demo")
    name = "n" * 250
    nested(root, name, 20)  # 20 * 251 bytes: far over PATH_MAX (4096) as one path
    with pytest.raises(PathRejected) as caught:
        read_folder(root)
    assert caught.value.rule == "too_deep"
    files = read_folder(root, limits=Limits(max_depth=21))  # a limit that lets it through
    assert files["/".join([name] * 20) + "/f.txt"].data == b"deep\n"


def test_an_ignore_file_that_is_not_utf8_is_refused_naming_it(tmp_path):
    root = make_skill(tmp_path / "demo", {".skillregignore": b"build/\n\xff\xfe*.tmp\n"})
    with pytest.raises(PathRejected) as caught:
        read_folder(root)
    assert (caught.value.path, caught.value.rule) == (".skillregignore", "not_utf8")


def test_an_ignore_file_that_cannot_be_read_is_refused_naming_it(tmp_path, deny):
    root = make_skill(tmp_path / "demo", {".skillregignore": b"build/\n"})
    deny(root / ".skillregignore")
    with pytest.raises(PathRejected) as caught:
        read_folder(root)
    assert (caught.value.path, caught.value.rule) == (".skillregignore", "unreadable")


def test_ignore_rules_come_before_the_link_check_for_folders_as_for_files(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "cache.bin").write_bytes(SECRET)
    root = make_skill(tmp_path / "demo", {".skillregignore": b"venv/\nlinked.txt\n"})
    (root / "venv").symlink_to(outside, target_is_directory=True)
    (root / "linked.txt").symlink_to(outside / "cache.bin")
    assert sorted(read_folder(root)) == [".skillregignore", "SKILL.md"]

    (root / "other").symlink_to(outside, target_is_directory=True)  # not ignored: refused
    with pytest.raises(PathRejected) as caught:
        read_folder(root)
    assert (caught.value.path, caught.value.rule) == ("other", "symlink")


def test_a_folder_reads_with_modes_and_skips_what_is_ignored(tmp_path):
    root = make_skill(
        tmp_path / "demo",
        {
            "scripts/run.py": b"print(1)\n",
            ".git/HEAD": b"ref: refs/heads/main\n",
            "notes.tmp": b"scratch\n",
            ".skillregignore": b"*.tmp\n",
        },
    )
    (root / "scripts" / "run.py").chmod(0o755)
    files = read_folder(root)
    assert sorted(files) == [".skillregignore", "SKILL.md", "scripts/run.py"]
    assert files["scripts/run.py"] == PackageFile(b"print(1)\n", executable=True)
    assert files["SKILL.md"] == PackageFile(SKILL_MD, executable=False)


# ---------------------------------------------------------------- writing

_WRITE_UNDER_A_FILE_SIZE_LIMIT = """
import resource, signal, sys
from pathlib import Path
from registry.domain.model import PackageFile
from registry.services.materialize.folder import write_folder

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
files = {
    "SKILL.md": PackageFile(b"---\\nname: demo\\ndescription: d\\n---\\n"),
    "big.bin": PackageFile(b"z" * 100_000),
}
try:
    write_folder(Path(sys.argv[1]), files)
except OSError as exc:
    print(exc.errno)
    sys.exit(7)
"""


@pytest.mark.parametrize("existing", [False, True], ids=["missing", "empty"])
def test_a_write_that_fails_part_way_leaves_no_partial_package(tmp_path, existing):
    parent = tmp_path / "out"
    parent.mkdir()
    target = parent / "demo"
    if existing:
        target.mkdir()
    child = subprocess.run(
        [sys.executable, "-c", _WRITE_UNDER_A_FILE_SIZE_LIMIT, str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == 7, child.stderr  # the write failed, with an OSError
    assert sorted(p.name for p in parent.iterdir()) == (["demo"] if existing else [])
    if existing:
        assert list(target.iterdir()) == []  # still the empty folder: no SKILL.md alone


def test_a_write_lands_whole_with_modes_in_a_missing_or_empty_folder(tmp_path):
    files = {
        "SKILL.md": PackageFile(SKILL_MD),
        "scripts/run.py": PackageFile(b"print(1)\n", executable=True),
    }
    for target in (tmp_path / "new" / "demo", tmp_path / "empty"):
        if target.name == "empty":
            target.mkdir()
        write_folder(target, files)
        assert read_folder(target) == files
        assert sorted(p.name for p in target.parent.iterdir() if p.name.startswith(".")) == []


def test_a_write_into_a_folder_that_is_not_empty_is_refused_and_changes_nothing(tmp_path):
    target = tmp_path / "demo"
    target.mkdir()
    (target / "keep.txt").write_bytes(b"mine\n")
    with pytest.raises(PathRejected) as caught:
        write_folder(target, {"SKILL.md": PackageFile(SKILL_MD)})
    assert caught.value.rule == "not_empty"
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]


@pytest.mark.parametrize("path", ["../evil.txt", "a/../../evil.txt", "/etc/evil.txt"])
def test_a_write_refuses_a_path_that_leaves_the_folder(tmp_path, path):
    target = tmp_path / "demo"
    with pytest.raises(PathRejected) as caught:
        write_folder(target, {"SKILL.md": PackageFile(SKILL_MD), path: PackageFile(b"x")})
    assert (caught.value.path, caught.value.rule) == (path, "escapes_target")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
