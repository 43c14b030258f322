"""One way to name a workspace: `-w/--workspace` (registry/cli/common.py's `workspace_option`).

Every command that takes a workspace takes it as that option, checked by the slug rules as
it is parsed; the commands that took it as their first argument still accept that for one
release, with a one-line warning. A read of a workspace or a skill that does not exist is
exit 5 naming the nearest existing names.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import click
from click.testing import CliRunner

from registry.cli.common import WORKSPACE
from registry.cli.main import LAZY_COMMANDS, cli, load_command
from registry.cli.packages import example_root
from tests.support.cli import run, run_json


def _commands() -> Iterator[tuple[str, click.Command]]:
    def walk(path: str, command: click.Command) -> Iterator[tuple[str, click.Command]]:
        yield path, command
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                yield from walk(f"{path} {name}", sub)

    for name in sorted({*LAZY_COMMANDS, *cli.commands}):
        yield from walk(name, load_command(name) if name in LAZY_COMMANDS else cli.commands[name])


def test_every_command_names_its_workspace_with_the_one_option():
    named = []
    for path, command in _commands():
        for param in command.params:
            if param.name == "workspace":
                assert isinstance(param, click.Option), path
                assert sorted(param.opts) == ["--workspace", "-w"], path
                assert param.type is WORKSPACE, path
                named.append(path)
    # The commands that took it as an argument, among the others.
    assert {"list", "proposals show", "pending drop", "loads", "exclude-source"} <= set(named)


def test_the_positional_workspace_still_works_with_a_warning(embedded):
    run("init")
    shutil.copytree(example_root() / "pdf-report", embedded / "pdf-report")
    run("publish", embedded / "pdf-report", "-w", "acme")
    result = CliRunner().invoke(cli, ["proposals", "list", "acme", "--json"])
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "warning: 'skillreg proposals list WORKSPACE' is deprecated; "
        "use 'skillreg proposals list -w WORKSPACE'\n"
    )
    assert json.loads(result.stdout) == run_json("proposals", "list", "-w", "acme")
    assert "given twice" in run("list", "acme", "-w", "acme", code=2)
    assert "Missing option '--workspace' / '-w'" in run("list", code=2)


def test_unknown_names_are_not_found_with_the_nearest_ones(embedded):
    run("init")
    shutil.copytree(example_root() / "pdf-report", embedded / "pdf-report")
    run("publish", embedded / "pdf-report", "-w", "acme")
    workspace = run_json("list", "-w", "acmee", code=5)
    assert (workspace["error"], workspace["details"]["nearest"]) == (
        "workspace_not_found",
        ["acme"],
    )
    slug = run_json("show", "acme/pdf-reprt", code=5)
    assert (slug["error"], slug["details"]["nearest"]) == ("skill_not_found", ["pdf-report"])
    assert run_json("history", "acmee/pdf-report", code=5)["error"] == "workspace_not_found"
    assert "invalid workspace: lower case only" in run("publish", embedded, "-w", "ACME", code=2)
