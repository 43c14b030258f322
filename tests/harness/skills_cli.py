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
    if _entry(HOME).is_file():
        return _entry(HOME)
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        raise ToolUnavailable(INSTRUCTION)
    staging = HOME.with_name(f"{HOME.name}.{uuid.uuid4().hex[:8]}")
    staging.mkdir(parents=True)
    try:
        done = subprocess.run(
            [
                npm,
                "install",
                "--no-audit",
                "--no-fund",
                "--prefix",
                str(staging),
                f"skills@{VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            env={**os.environ, "DISABLE_TELEMETRY": "1"},
        )
        if done.returncode != 0 or not _entry(staging).is_file():
            raise ToolUnavailable(f"{INSTRUCTION} (npm said: {done.stderr.strip()[-300:]})")
        try:
            staging.rename(HOME)
        except OSError:
            if not _entry(HOME).is_file():  # not a concurrent install that won the race
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return _entry(HOME)
