"""Driving `skillreg` in-process with click's runner, as the command-line suites do.

`run` and `run_json` check the exit code and let an unexpected exception propagate with
its traceback (a command's refusals are exit codes, never exceptions). `initialised`
gives an invoker bound to an environment, for tests that look at the whole `Result`.
The `embedded` fixture (a fresh working directory with no `SKILLREG_*` settings) is in
`tests/plugins/cli.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from registry.cli.main import cli

Invoke = Callable[..., Result]


def run(*args: object, code: int = 0) -> str:
    """Run `skillreg` with `args`, check that it exits with `code`, return what it printed."""
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def run_json(*args: object, code: int = 0) -> Any:
    """`run` with `--json`, its output parsed."""
    return json.loads(run(*args, "--json", code=code))


def database_options(database_url: str, blob_root: Path) -> list[str]:
    """The global options that point `skillreg` at a database and a blob folder."""
    return ["--database-url", database_url, "--blob-url", blob_root.as_uri()]


def settings_env(database_url: str, blob_root: Path, **settings: object) -> dict[str, str]:
    """An environment that points `skillreg` at a database and a blob folder.

    `settings` become `SKILLREG_<NAME>` variables (`max_files=8`: `SKILLREG_MAX_FILES=8`).
    """
    return {
        "SKILLREG_DATABASE_URL": database_url,
        "SKILLREG_BLOB_URL": blob_root.as_uri(),
        **{f"SKILLREG_{name.upper()}": str(value) for name, value in settings.items()},
    }


def initialised(env: dict[str, str]) -> Invoke:
    """An invoker of `skillreg` in `env`, once `skillreg init` has succeeded there."""
    runner = CliRunner()

    def invoke(*args: object) -> Result:
        return runner.invoke(cli, [str(a) for a in args], env=env)

    assert invoke("init").exit_code == 0
    return invoke


def tree(root: Path) -> dict[str, tuple[bytes, bool]]:
    """Every file under `root`: its relative path -> (bytes, executable by its owner)."""
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), bool(p.stat().st_mode & 0o100))
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
