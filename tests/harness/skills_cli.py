"""The npm `skills` client (the Agent Skills CLI), installed for the tests that run it.

`ensure_skills_cli()` returns the client's entry script, installing `skills@1.6.0` with npm
into `.venv/node/` the first time (the 1.7 line needs Node 22; 1.6.0 runs on Node 20).
The install goes to a temporary folder renamed into place, so an interrupted or concurrent
install never leaves a half-installed client behind, and later sessions reuse it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2]
VERSION: Final = "1.6.0"
HOME: Final = ROOT / ".venv" / "node" / f"skills-{VERSION}"
INSTRUCTION: Final = (
    "the discovery tests run the npm `skills` client: install Node.js 20 and npm "
    "(Debian: apt-get install nodejs npm) and let `npm install skills@1.6.0` reach the registry"
)


class ToolUnavailable(RuntimeError):
    """The client cannot be installed here; the message says what to do."""


def _entry(home: Path) -> Path:
    return home / "node_modules" / "skills" / "bin" / "cli.mjs"


def ensure_skills_cli() -> Path:
    """The path of the client's `cli.mjs` (run it with `node`), installed if needed."""
    if shutil.which("node") is None:
        raise ToolUnavailable(INSTRUCTION)
    npm_install(HOME, [f"skills@{VERSION}"], lambda home: _entry(home).is_file(), INSTRUCTION)
    return _entry(HOME)


def npm_install(
    home: Path, packages: list[str], installed: Callable[[Path], bool], instruction: str
) -> None:
    """Install `packages` with npm into `home` unless `installed(home)` already holds.

    Into a temporary folder renamed into place: an interrupted or concurrent install never
    leaves a half-installed client, and a concurrent one that won the race is kept.
    """
    if installed(home):
        return
    npm = shutil.which("npm")
    if npm is None:
        raise ToolUnavailable(instruction)
    staging = home.with_name(f"{home.name}.{uuid.uuid4().hex[:8]}")
    staging.mkdir(parents=True)
    try:
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(staging), *packages],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            env={**os.environ, "DISABLE_TELEMETRY": "1"},
        )
        if done.returncode != 0 or not installed(staging):
            raise ToolUnavailable(f"{instruction} (npm said: {done.stderr.strip()[-300:]})")
        try:
            staging.rename(home)
        except OSError:
            if not installed(home):  # not a concurrent install that won the race
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
