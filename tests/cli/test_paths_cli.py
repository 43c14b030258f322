"""One rule for a path a command reads: missing, or of the wrong kind, is a usage error (2).

Issue 15, item 12: a file given where a folder is expected was a usage error (exit 2) while
a missing folder was refused input (exit 3). Click checks both now, before the command runs.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from registry.cli.main import cli

COMMANDS = {
    "publish": ["publish", "{path}", "--workspace", "acme"],
    "catalog publish": ["catalog", "publish", "{path}", "--listing", "demo"],
    "proposals decide": [
        "proposals",
        "decide",
        "-w",
        "acme",
        "1",
        "alternative",
        "--from",
        "{path}",
    ],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_folder_argument_that_is_missing_or_a_file_is_a_usage_error(embedded, command, kind):
    path = embedded / "package"
    if kind == "file":
        path.write_text("not a folder\n")
    args = [a.format(path=path) for a in COMMANDS[command]]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    expected = "does not exist" if kind == "missing" else "is a file"
    assert expected in result.output
