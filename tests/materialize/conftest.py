"""Fixtures for the reconciler's tests: a target directory and a few published skills."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry import ANY, Registry, Scope
from registry.domain.model import Publication
from tests.support.packages import as_bytes, package

ACME = Scope("acme")


@pytest.fixture
def target(tmp_path: Path) -> Path:
    return tmp_path / "target"


async def publish(
    registry: Registry, slug: str, *, tag: str = "", files: int = 3, scope: Scope = ACME
) -> Publication:
    return await registry.write_package(
        scope, slug, package(slug, tag=tag, files=files), expected_head=ANY, actor="t"
    )


def expected_files(slug: str, *, tag: str = "", files: int = 3) -> dict[str, tuple[bytes, bool]]:
    return as_bytes(package(slug, tag=tag, files=files))
