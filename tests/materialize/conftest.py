"""Fixtures for the reconciler's tests: a target directory, published skills, and a registry
served over HTTP for `skillreg sync` (`remote`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from registry import ANY, ReconcileReport, Registry, Scope
from registry.client import Sync
from registry.failpoints import NO_FAILPOINTS, Failpoints
from registry.http.app import create_app
from tests.support import packages
from tests.support.appserver import AppServer, Faults
from tests.support.packages import as_bytes, package
from tests.support.scopes import ACME
from tests.support.trust import registry_root


@pytest.fixture
def target(tmp_path: Path) -> Path:
    return tmp_path / "target"


publish = partial(packages.publish, expected=ANY, actor="t")
"""The shared `publish`, over whatever head the skill has: these tests republish freely."""


def expected_files(slug: str, *, tag: str = "", files: int = 3) -> dict[str, tuple[bytes, bool]]:
    return as_bytes(package(slug, tag=tag, files=files))


@dataclass
class Remote:
    """The test's registry served over HTTP (behind `faults`), as `skillreg sync` sees it."""

    registry: Registry
    server: AppServer
    faults: Faults
    token: str  # a `read` token of acme

    @property
    def url(self) -> str:
        return self.server.url

    def sync(
        self,
        target: Path,
        *,
        token: str | None = None,
        scope: Scope = ACME,
        failpoints: Failpoints = NO_FAILPOINTS,
        **options: Any,
    ) -> Sync:
        options.setdefault("trust", registry_root())
        return Sync(self.url, token or self.token, scope, target, failpoints=failpoints, **options)

    async def once(self, target: Path, **options: Any) -> ReconcileReport:
        async with self.sync(target, **options) as syncer:
            return await syncer.once()

    async def new_token(self, role: str = "read", workspace: str = ACME.workspace) -> str:
        issued = await self.registry.tokens.create(workspace, role, name="sync", actor="t")
        return issued.token


@pytest.fixture
async def remote(registry) -> AsyncIterator[Remote]:
    faults = Faults(create_app(registry))
    server = AppServer(faults)
    await server.start()
    issued = await registry.tokens.create(ACME.workspace, "read", name="sync", actor="t")
    yield Remote(registry, server, faults, issued.token)
    await server.stop()
