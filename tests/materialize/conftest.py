"""Fixtures for the reconciler's tests: a target directory and a few published skills."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from registry import ANY
from tests.support import packages
from tests.support.packages import as_bytes, package


@pytest.fixture
def target(tmp_path: Path) -> Path:
    return tmp_path / "target"


publish = partial(packages.publish, expected=ANY, actor="t")
"""The shared `publish`, over whatever head the skill has: these tests republish freely."""


def expected_files(slug: str, *, tag: str = "", files: int = 3) -> dict[str, tuple[bytes, bool]]:
    return as_bytes(package(slug, tag=tag, files=files))
