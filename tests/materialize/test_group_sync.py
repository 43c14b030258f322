"""A folder's fsync shared by the skills written at once (`target.GroupSync`).

Its one promise: `sync` returns only after an fsync that started after the call has
completed (one already under way may have missed the caller's rename). Sharing is what
it saves: callers that arrive during one fsync are all covered by the next.
"""

from __future__ import annotations

import threading

import pytest

from registry.services.materialize import target as target_module
from registry.services.materialize.target import GroupSync


class _Disk:
    """An fsync that blocks until the test lets it finish, numbering each call."""

    def __init__(self) -> None:
        self.started: list[threading.Event] = []
        self.release: list[threading.Event] = []
        self.lock = threading.Lock()

    def fsync(self, fd: int) -> None:
        assert fd == 7
        with self.lock:
            self.started.append(threading.Event())
            self.release.append(threading.Event())
            n = len(self.started) - 1
        self.started[n].set()
        assert self.release[n].wait(10)

    def wait_started(self, n: int) -> None:
        for _ in range(1000):
            with self.lock:
                if len(self.started) > n:
                    break
            threading.Event().wait(0.01)
        assert self.started[n].wait(10)


def _caller(shared: GroupSync, done: threading.Event) -> threading.Thread:
    def run() -> None:
        shared.sync()
        done.set()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_caller_waits_for_an_fsync_that_started_after_it(monkeypatch: pytest.MonkeyPatch):
    disk = _Disk()
    monkeypatch.setattr(target_module.fsops, "fsync_fd", disk.fsync)
    shared = GroupSync(lambda: 7)

    first = threading.Event()
    threads = [_caller(shared, first)]
    disk.wait_started(0)  # fsync 1 is under way
    late = [threading.Event() for _ in range(3)]
    threads += [_caller(shared, d) for d in late]  # they came after it started

    disk.release[0].set()  # fsync 1 completes: it covers the first caller only
    assert first.wait(10)
    disk.wait_started(1)  # one more fsync, for all three late callers
    assert not any(d.is_set() for d in late)
    disk.release[1].set()
    for thread in threads:
        thread.join(10)
    assert all(d.is_set() for d in late)
    assert len(disk.started) == 2  # four callers, two fsyncs


def test_a_failed_fsync_raises_in_its_caller_and_the_others_try_again(
    monkeypatch: pytest.MonkeyPatch,
):
    calls: list[int] = []

    def fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(target_module.fsops, "fsync_fd", fsync)
    shared = GroupSync(lambda: 7)
    with pytest.raises(OSError, match="Input/output error"):
        shared.sync()
    shared.sync()  # not taken as covered by the fsync that failed
    assert calls == [7, 7]
