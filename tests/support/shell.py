"""A clean shell for tests that run what a user types: no activated venv, no stray packages.

`clean_env` is the environment of a new login shell on the machine: the system's `PATH`
only (no pyenv shims, no `~/.local/bin`, no `.venv/bin`), `HOME` a fresh folder, and none of
the variables that would make Python or the registry behave differently (`PYTHONPATH`,
`VIRTUAL_ENV`, `SKILLREG_*`). A test that means a program to be found adds its folder.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

# The system's own folders: the machine's `python3` here has no third-party packages.
SYSTEM_PATH = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")


def clean_env(home: Path, *, path: Sequence[Path] = ()) -> dict[str, str]:
    """A login shell's environment with `home` as `HOME` and `path` before the system's."""
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "PATH": os.pathsep.join([*(str(p) for p in path), *SYSTEM_PATH]),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
    }
