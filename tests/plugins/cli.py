"""Command-line fixtures: `skillreg` on its embedded default, in a fresh working directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.settings import Settings


@pytest.fixture
def embedded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The embedded default: SQLite and blobs under `./.skillreg` of the working directory.

    The working directory is `tmp_path`, and no setting comes from the environment the
    tests run in: only the defaults decide where the registry lives.
    """
    prefix = Settings.model_config.get("env_prefix", "")
    for name in Settings.model_fields:
        monkeypatch.delenv(f"{prefix}{name}".upper(), raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path
