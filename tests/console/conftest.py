"""The console in-process (httpx over ASGI) on each database; see `site.py`."""

from __future__ import annotations

import httpx
import pytest

from registry.http.app import create_app
from tests.console.site import make_site


@pytest.fixture
async def site(make_registry):
    registry = await make_registry()
    app = create_app(registry)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://console.test") as client:
        yield await make_site(registry, client)
