"""`skillreg sync` on the command line: one run, its exit codes, and the watch loop.

The command runs in a worker thread (`--once`, click's runner) or in a process of its own
(the watch loop, which handles SIGTERM), while the test's loop serves the registry.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import pytest

from registry.services.materialize.lockfile import LockedSkill, LockFile
from tests.materialize.conftest import expected_files, publish
from tests.support.cli import run, run_json
from tests.support.targets import load_skill
from tests.support.trust import run_key

SKILLREG = str(Path(sys.executable).parent / "skillreg")


def _args(remote, target: Path, *more: object) -> list[object]:
    return [
        "sync",
        "--from",
        remote.url,
        "--token",
        remote.token,
        "-w",
        "acme",
        "-t",
        target,
        "--trust-fingerprint",
        run_key().key_id,
        *more,
    ]


async def test_once_prints_the_report_and_exits_like_reconcile(remote, target, tmp_path):
    await publish(remote.registry, "alpha")
    report = await asyncio.to_thread(run_json, *_args(remote, target, "--once"))
    assert report["written"] == ["alpha"]
    assert report["fetched"] == len(expected_files("alpha"))
    assert load_skill(target, "alpha") == expected_files("alpha")

    token_file = tmp_path / "token"
    token_file.write_text(remote.token + "\n")
    args = ["sync", "--from", remote.url, "--token-file", token_file, "-w", "acme", "-t", target]
    human = await asyncio.to_thread(run, *args, "--once")
    assert "unchanged alpha" in " ".join(human.split())

    lock = tmp_path / "acme.lock"
    lock.write_text(LockFile("acme", "personal", (LockedSkill("alpha", 1, "0" * 64),)).dumps())
    refused = await asyncio.to_thread(
        run_json, *_args(remote, target, "--once", "--lock", lock), code=4
    )
    assert refused["failed"].keys() == {"alpha"}


async def test_the_token_is_given_exactly_once(remote, target, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(remote.token)
    both = _args(remote, target, "--token-file", token_file, "--once")
    assert "exactly one of --token and --token-file" in await asyncio.to_thread(run, *both, code=2)
    neither = ["sync", "--from", remote.url, "-w", "acme", "-t", target, "--once"]
    await asyncio.to_thread(run, *neither, code=2)


@pytest.mark.slow
async def test_the_watch_loop_follows_the_registry_until_sigterm(remote, target):
    await publish(remote.registry, "alpha")
    process = await asyncio.create_subprocess_exec(
        SKILLREG,
        *map(str, _args(remote, target, "--json", "--interval", "0.2")),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    try:
        async with asyncio.timeout(60):  # a hang guard, not a timing assertion
            first = json.loads(await process.stdout.readline())
            assert first["written"] == ["alpha"]
            await publish(remote.registry, "alpha", tag="two")
            second = json.loads(await process.stdout.readline())
            assert second["written"] == ["alpha"]  # unchanged runs print nothing
            assert load_skill(target, "alpha") == expected_files("alpha", tag="two")
            process.send_signal(signal.SIGTERM)
            last = json.loads(await process.stdout.readline())
            assert last == {"stopped": True}
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
