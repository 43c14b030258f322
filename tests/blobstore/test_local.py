"""LocalBlobStore beyond the contract: layout, durability steps, crash leftovers, strays."""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
import stat
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from blobstore import BlobNotFound, BlobStoreUnavailable, DigestMismatch, compute_digest
from blobstore import local as local_module
from blobstore.local import TEMP_DIR, LocalBlobStore


@pytest.fixture
async def local(tmp_path):
    store = LocalBlobStore(tmp_path / "blobs")
    await store.ensure()
    yield store
    await store.close()


def object_path(store, digest):
    return store.root / digest[:2] / digest[2:4] / digest


def temp_files(store):
    return sorted(path.name for path in (store.root / TEMP_DIR).iterdir())


def blob_in_top_shard(top, avoid=()):
    """Return (digest, data) of a blob whose digest starts with `top`."""
    for seed in range(100_000):
        data = f"blob {seed}".encode()
        digest = compute_digest(data)
        if digest.startswith(top) and digest not in avoid:
            return digest, data
    raise AssertionError(f"no blob found in shard {top}")


async def listing(store):
    return [info.digest async for info in store.iter_digests()]


async def test_objects_are_sharded_read_only_files(local):
    data = b"layout"
    digest = compute_digest(data)
    await local.put(digest, data)

    path = object_path(local, digest)
    assert path.read_bytes() == data
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert temp_files(local) == []


def _path_of(fd):
    return str(Path(f"/proc/self/fd/{fd}").readlink())


@pytest.fixture
def io_log(monkeypatch):
    """Record writeback starts and fsyncs (by the descriptor's path) and renames, in order."""
    log = []
    real_fsync, real_replace = os.fsync, os.replace
    real_start = local_module._start_writeback

    def fsync(fd):
        log.append(("fsync", _path_of(fd)))
        real_fsync(fd)

    def start_writeback(fd):
        log.append(("writeback", _path_of(fd)))
        return real_start(fd)

    def replace(source, target):
        log.append(("replace", os.fspath(source), os.fspath(target)))
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(local_module, "_start_writeback", start_writeback)
    return log


async def test_put_writes_temp_fsyncs_renames_then_fsyncs_directories(local, io_log):
    data = b"durable"
    digest = compute_digest(data)
    root = str(local.root)
    top = f"{root}/{digest[:2]}"
    shard = f"{top}/{digest[2:4]}"

    await local.put(digest, data)

    # New shard directories are made durable through their parents, then the temp file
    # is synced before the rename, and the rename is synced through its directory.
    assert io_log[:2] == [("fsync", root), ("fsync", top)]
    (_, temp), (_, source, target), last = io_log[2:]
    assert temp.startswith(f"{root}/{TEMP_DIR}/{digest[:16]}.")
    assert (source, target) == (temp, f"{shard}/{digest}")
    assert last == ("fsync", shard)


async def test_put_into_known_directories_syncs_file_and_shard_only(local, io_log):
    first_digest, first = blob_in_top_shard("ab")
    second_digest, second = blob_in_top_shard("ab", avoid={first_digest})
    await local.put(first_digest, first)
    io_log.clear()

    await local.put(second_digest, second)

    shard = f"{local.root}/{second_digest[:2]}/{second_digest[2:4]}"
    kinds = [entry[0] for entry in io_log]
    new_middle_shard = second_digest[2:4] != first_digest[2:4]
    assert kinds == ["fsync"] * (1 + new_middle_shard) + ["replace", "fsync"]
    assert io_log[-1] == ("fsync", shard)


async def test_a_second_store_syncs_directories_another_writer_created(local, io_log):
    first_digest, first = blob_in_top_shard("cd")
    second_digest, second = blob_in_top_shard("cd", avoid={first_digest})
    await local.put(first_digest, first)
    other = LocalBlobStore(local.root)
    io_log.clear()

    await other.put(second_digest, second)

    # The `cd` directory exists already, but this store cannot know that its entry is on
    # disk, so it syncs the root again before relying on it.
    assert io_log[0] == ("fsync", str(local.root))


async def test_put_of_a_present_object_writes_nothing_and_syncs_its_directory(local, io_log):
    """Its writer may not have synced the rename yet; this put must not rely on that."""
    data = b"present"
    digest = compute_digest(data)
    await local.put(digest, data)
    io_log.clear()

    assert await local.put(digest, data) is False
    assert io_log == [("fsync", str(object_path(local, digest).parent))]
    assert temp_files(local) == []


def _blobs(count, seed=""):
    return {compute_digest(d): d for d in (f"batch {seed} {i}".encode() for i in range(count))}


async def test_put_many_takes_each_step_for_the_whole_batch(local, io_log):
    first_digest, first = blob_in_top_shard("ef")
    second_digest, second = blob_in_top_shard("ef", avoid={first_digest})
    blobs = {first_digest: first, second_digest: second, **_blobs(3)}
    await local.put_many(_blobs(1, "warm"))  # the temp directory's parent is synced
    io_log.clear()

    assert await local.put_many(blobs) == frozenset(blobs)

    temps = f"{local.root}/{TEMP_DIR}/"
    kinds = [
        "temp" if entry[0] == "fsync" and entry[1].startswith(temps) else entry[0]
        for entry in io_log
    ]
    # Directories made on the way first (fsyncs of their parents), then every temp file's
    # writeback started, then every temp file fsynced, then every rename, then each shard
    # directory once.
    steps = [k for i, k in enumerate(kinds) if i == 0 or k != kinds[i - 1]]
    assert steps[-4:] == ["writeback", "temp", "replace", "fsync"]
    assert kinds.count("writeback") == kinds.count("temp") == kinds.count("replace") == len(blobs)
    started = [entry[1] for entry in io_log if entry[0] == "writeback"]
    fsynced = [entry[1] for entry in io_log if entry[0] == "fsync" and entry[1].startswith(temps)]
    assert started == fsynced  # the same temp files, in the same order
    shards = {str(object_path(local, d).parent) for d in blobs}
    synced = [entry[1] for entry in io_log[len(kinds) - len(shards) :]]
    assert sorted(synced) == sorted(shards)
    for digest, data in blobs.items():
        assert object_path(local, digest).read_bytes() == data
    assert temp_files(local) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range is Linux's")
def test_the_writeback_hint_is_linuxs_sync_file_range(tmp_path):
    # The hint is live, not the fallback: the real call starts a written file's writeback.
    assert local_module._start_writeback is not local_module._no_hint
    fd = os.open(tmp_path / "written", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.write(fd, b"dirty page" * 1000)
        assert local_module._start_writeback(fd) == 0
        # On a descriptor that is not a file, the call fails and the hint says so; the
        # fsync after it would report the same.
        assert local_module._start_writeback(-1) == -1
    finally:
        os.close(fd)


async def test_put_many_stores_more_blobs_than_a_batch(local, monkeypatch):
    monkeypatch.setattr(local_module, "PUT_BATCH", 2)
    blobs = _blobs(5)
    assert await local.put_many(blobs) == frozenset(blobs)
    assert sorted(await listing(local)) == sorted(blobs)
    assert temp_files(local) == []


async def test_a_mismatch_anywhere_in_a_batch_stores_nothing(local):
    blobs = _blobs(3)
    wrong_digest = next(iter(_blobs(1, "other")))
    with pytest.raises(DigestMismatch):
        await local.put_many({**blobs, wrong_digest: b"not these bytes"})
    assert await listing(local) == []
    assert temp_files(local) == []


async def test_a_failed_fsync_in_a_batch_renames_nothing(local, monkeypatch):
    blobs = _blobs(3)
    real_fsync = os.fsync
    synced = []

    def fail_on_the_second_file(fd):
        if stat.S_ISREG(os.fstat(fd).st_mode):
            synced.append(fd)
            if len(synced) == 2:
                raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fail_on_the_second_file)
    with pytest.raises(BlobStoreUnavailable, match="Input/output error"):
        await local.put_many(blobs)
    monkeypatch.undo()

    assert await listing(local) == []
    assert temp_files(local) == []


async def test_a_failed_rename_in_a_batch_still_syncs_what_is_in_place(local, io_log, monkeypatch):
    blobs = _blobs(3)
    replace = os.replace  # the io_log's recorder
    renames = []

    def fail_on_the_second(source, target):
        renames.append(target)
        if len(renames) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        replace(source, target)

    monkeypatch.setattr(os, "replace", fail_on_the_second)
    with pytest.raises(BlobStoreUnavailable, match="No space left"):
        await local.put_many(blobs)

    placed = Path(renames[0])
    assert await listing(local) == [placed.name]
    # The object in place had its directory synced after its rename, before the error.
    assert io_log.index(("fsync", str(placed.parent))) > io_log.index(
        next(e for e in io_log if e[0] == "replace")
    )
    assert temp_files(local) == []


@pytest.mark.parametrize("failing", ["replace", "file-fsync"])
async def test_failed_write_leaves_no_temp_file_and_no_object(local, monkeypatch, failing):
    data = b"no space"
    digest = compute_digest(data)
    real_fsync = os.fsync

    def fail(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    def fail_on_files(fd):
        if stat.S_ISREG(os.fstat(fd).st_mode):
            fail()
        real_fsync(fd)

    if failing == "replace":
        monkeypatch.setattr(os, "replace", fail)
    else:
        monkeypatch.setattr(os, "fsync", fail_on_files)
    with pytest.raises(BlobStoreUnavailable, match="No space left") as failed:
        await local.put(digest, data)
    monkeypatch.undo()

    assert isinstance(failed.value.__cause__, OSError)
    assert temp_files(local) == []
    assert not await local.exists(digest)


async def test_crash_leftovers_are_ignored_and_swept(local):
    data = b"kept"
    digest = compute_digest(data)
    await local.put(digest, data)
    tmp = local.root / TEMP_DIR
    now = datetime.now(UTC)
    old = (now - timedelta(hours=2)).timestamp()
    for name in (f"{digest[:16]}.crashed.tmp", "another.tmp"):
        (tmp / name).write_bytes(b"half a blob")
        os.utime(tmp / name, (old, old))
    (tmp / "in-progress.tmp").write_bytes(b"a live writer")

    assert await listing(local) == [digest]

    assert await local.sweep_temp(now - timedelta(hours=1)) == 2
    assert temp_files(local) == ["in-progress.tmp"]
    assert await local.sweep_temp(now - timedelta(hours=1)) == 0
    assert await local.get(digest) == data


@pytest.fixture
def parked_rename(monkeypatch):
    """Hold the first rename of a temp file into place until `proceed` is set.

    The put waits in its worker thread with its temp file written, fsynced and (if the
    store locks it) locked; `written` is set then.
    """
    written, proceed = threading.Event(), threading.Event()
    real_replace = os.replace

    def replace(source, target):
        if not written.is_set():
            written.set()
            proceed.wait()
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    yield written, proceed
    proceed.set()


async def test_a_sweep_leaves_the_temp_file_of_an_upload_in_progress(local, parked_rename):
    """Whatever the cutoff: the writer holds its temp file's lock until the rename."""
    written, proceed = parked_rename
    data = b"a slow upload"
    digest = compute_digest(data)
    put = asyncio.create_task(local.put(digest, data))
    assert await asyncio.to_thread(written.wait, 30)
    assert len(temp_files(local)) == 1

    assert await local.sweep_temp(datetime.now(UTC) + timedelta(days=1)) == 0
    assert len(temp_files(local)) == 1
    proceed.set()
    assert await put is True
    assert await local.get(digest) == data
    assert temp_files(local) == []


async def test_an_unlocked_temp_file_is_swept_whatever_its_name(local):
    """A crashed writer's lock died with it; a file someone else holds locked is kept."""
    tmp = local.root / TEMP_DIR
    (tmp / "crashed.tmp").write_bytes(b"left behind")
    held = tmp / "held.tmp"
    held.write_bytes(b"another process's upload")
    fd = os.open(held, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert await local.sweep_temp(datetime.now(UTC) + timedelta(days=1)) == 1
        assert temp_files(local) == ["held.tmp"]
    finally:
        os.close(fd)
    assert await local.sweep_temp(datetime.now(UTC) + timedelta(days=1)) == 1
    assert temp_files(local) == []


async def test_a_sweep_before_the_writer_locks_its_temp_file_makes_it_start_another(
    local, monkeypatch
):
    """The one unlocked moment, between `mkstemp` and `flock`: the writer notices and retries."""
    loop = asyncio.get_running_loop()
    real_flock = fcntl.flock
    swept = []

    def flock(fd, operation):
        if operation == fcntl.LOCK_EX and not swept:
            # The writer's first lock, not yet taken: a sweep (another thread) runs now.
            future = datetime.now(UTC) + timedelta(days=1)
            sweep = asyncio.run_coroutine_threadsafe(local.sweep_temp(future), loop)
            swept.append(sweep.result(timeout=30))
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    data = b"raced by a sweep"
    digest = compute_digest(data)
    assert await local.put(digest, data) is True
    assert swept == [1]
    assert await local.get(digest) == data
    assert temp_files(local) == []


async def test_sweep_temp_needs_an_aware_cutoff(local):
    with pytest.raises(ValueError, match="timezone-aware"):
        await local.sweep_temp(datetime(2020, 1, 1))  # noqa: DTZ001


async def test_stray_entries_are_skipped_by_iter_digests(local, tmp_path):
    data = b"real"
    digest = compute_digest(data)
    await local.put(digest, data)
    elsewhere = compute_digest(b"elsewhere")
    shard = object_path(local, digest).parent
    (shard / "notes.txt").write_text("not a blob")
    (shard / elsewhere).write_bytes(b"elsewhere")  # a valid name in the wrong shard
    (local.root / elsewhere).write_bytes(b"elsewhere")  # flat, at the root
    (local.root / "zz" / "yy").mkdir(parents=True)
    (local.root / "zz" / "yy" / elsewhere).write_bytes(b"elsewhere")
    (local.root / "AB").mkdir()
    directory_digest = compute_digest(b"a directory")
    object_path(local, directory_digest).mkdir(parents=True)
    target = tmp_path / "outside"
    target.write_bytes(b"outside")
    linked = compute_digest(b"outside")
    object_path(local, linked).parent.mkdir(parents=True, exist_ok=True)
    object_path(local, linked).symlink_to(target)

    assert await listing(local) == [digest]


async def test_listing_in_batches_resumes_after_the_last_shard_scanned(local, monkeypatch):
    # Batches of two: one top shard's middle shards are listed in several worker hops.
    monkeypatch.setattr(local_module, "LIST_BATCH", 2)
    blobs: dict[str, bytes] = {}
    for _ in range(7):
        digest, data = blob_in_top_shard("ab", avoid=blobs)
        blobs[digest] = data
    for seed in range(20):
        data = f"elsewhere {seed}".encode()
        blobs[compute_digest(data)] = data
    for digest, data in blobs.items():
        await local.put(digest, data)

    infos = [info async for info in local.iter_digests()]

    assert [info.digest for info in infos] == sorted(blobs)
    assert {info.digest: info.size for info in infos} == {d: len(b) for d, b in blobs.items()}


async def test_symlinked_object_is_not_followed(local, tmp_path):
    data = b"outside the store"
    digest = compute_digest(data)
    target = tmp_path / "outside"
    target.write_bytes(data)
    path = object_path(local, digest)
    path.parent.mkdir(parents=True)
    path.symlink_to(target)

    assert not await local.exists(digest)
    with pytest.raises(BlobNotFound):
        await local.get(digest)
    # A put replaces the link itself with a real object; the target is left alone.
    assert await local.put(digest, data) is True
    assert not path.is_symlink()
    assert target.read_bytes() == data


async def test_truncated_object_is_repaired_by_put(local):
    data = b"0123456789" * 100
    digest = compute_digest(data)
    await local.put(digest, data)
    path = object_path(local, digest)
    path.chmod(0o644)
    path.write_bytes(data[:10])

    assert await local.put(digest, data) is True
    assert await local.get(digest) == data


async def test_store_without_root_is_unavailable_until_ensured(tmp_path):
    store = LocalBlobStore(tmp_path / "not-mounted" / "blobs")
    data = b"first"
    digest = compute_digest(data)

    for call in (
        lambda: store.put(digest, data),
        lambda: store.get(digest),
        lambda: store.exists(digest),
        lambda: store.delete(digest),
        lambda: listing(store),
        lambda: store.sweep_temp(datetime.now(UTC)),
        store.check,
    ):
        with pytest.raises(BlobStoreUnavailable, match="does not exist"):
            await call()
    assert list(tmp_path.iterdir()) == []

    await store.ensure()
    await store.check()
    assert await store.put(digest, data) is True
    assert temp_files(store) == []


async def test_relative_root_is_made_absolute_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = LocalBlobStore("relative/blobs")
    monkeypatch.chdir("/")

    assert store.root == tmp_path / "relative" / "blobs"
    assert store.url == (tmp_path / "relative" / "blobs").as_uri()
