"""Ctrl-C during a writing command never misreports the write (registry/cli/common.py).

The command runs in a subprocess whose registry holds the write at one failpoint until
the test releases it (a line on stdin): no sleeps. One Ctrl-C lets the write finish and
the command reports what happened (exit 0); a second one stops waiting, and the command
says the outcome is unknown and how to check. Either way `history` agrees. `publish`
takes the mechanism directly (`interrupt_safe_write`); `gc`, like every other writing
command, through `CliState.open(write=...)`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from click.testing import CliRunner

from registry.cli.exits import NOT_FOUND
from registry.cli.main import cli
from tests.support.cli import run

HELD = """
import asyncio, sys
from registry.api import Registry
from registry.cli.main import main

POINT = sys.argv[1]

class Gate:
    async def hit(self, name):
        if name == POINT:
            print(f"held at {name}", file=sys.stderr, flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)

opened = Registry.open
Registry.open = lambda **options: opened(failpoints=Gate(), **options)
sys.argv = ["skillreg", *sys.argv[2:]]
main()
"""
FINISHING = "interrupted: finishing the write in progress"


def _held(point: str, *args: str) -> subprocess.Popen[str]:
    """`skillreg ARGS` in a subprocess, its registry held at failpoint `point`."""
    process = subprocess.Popen(
        [sys.executable, "-c", HELD, point, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _until(process, f"held at {point}")
    os.kill(process.pid, signal.SIGINT)
    _until(process, FINISHING)
    return process


def _until(process: subprocess.Popen[str], text: str) -> None:
    assert process.stderr is not None
    for line in process.stderr:
        if text in line:
            return
    pytest.fail(f"the command ended before printing {text!r}")


def _versions(ref: str) -> list[int]:
    """The version numbers `skillreg history` lists (none for a skill never published)."""
    result = CliRunner().invoke(cli, ["history", ref, "--json"])
    if result.exit_code == NOT_FOUND:
        return []
    assert result.exit_code == 0, result.output
    return [v["number"] for v in json.loads(result.output)["items"]]


@pytest.mark.parametrize(
    ("point", "interrupts"),
    [
        ("publish.locked", 1),
        ("publish.committed", 1),
        ("publish.before_commit", 2),
        ("publish.committed", 2),
    ],
)
def test_an_interrupted_publish_reports_what_history_shows(embedded, point, interrupts):
    run("init")
    skill = embedded / "demo-skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: demo-skill\ndescription: A demo.\n---\n\nHi.\n")
    process = _held(point, "publish", str(skill), "-w", "acme", "--json")
    release = "\n"
    if interrupts == 2:
        os.kill(process.pid, signal.SIGINT)
        _until(process, "interrupted again")  # the write is cancelled, never released
        release = ""
    stdout, stderr = process.communicate(release, timeout=120)
    assert "Traceback" not in stderr
    versions = _versions("acme/demo-skill")
    if interrupts == 1:
        assert process.returncode == 0, stderr
        assert json.loads(stdout)["version"] == 1
        assert versions == [1]
    else:  # cancelled where it was held: before the commit, or after it
        assert process.returncode == 1, stderr
        body = json.loads(stdout)
        assert body["message"] == (
            "interrupted: the outcome of the write is unknown; "
            "check with `skillreg history acme/demo-skill`"
        )
        assert versions == ([1] if point == "publish.committed" else [])


@pytest.mark.parametrize("interrupts", [1, 2])
def test_an_interrupted_gc_reports_its_run_or_says_how_to_check(embedded, interrupts):
    run("init")
    process = _held("gc.claims_expired", "gc", "--grace", "0", "--json")
    release = "\n"
    if interrupts == 2:
        os.kill(process.pid, signal.SIGINT)
        _until(process, "interrupted again")
        release = ""
    stdout, stderr = process.communicate(release, timeout=120)
    assert "Traceback" not in stderr
    body = json.loads(stdout)
    if interrupts == 1:  # the run finished and reports what it did
        assert process.returncode == 0, stderr
        assert body["figures"] is not None
    else:
        assert process.returncode == 1, stderr
        assert body["message"] == (
            "interrupted: the outcome of the write is unknown; check with `skillreg gc stats`"
        )
