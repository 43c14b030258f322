"""The console in headless Chromium (Debian's `/usr/bin/chromium`, driven by Playwright).

- `console_site(**settings)`: `create_app(registry, jobs=True)` served by uvicorn on a
  loopback port in the test's own event loop (like `tests/http`), over a registry on the
  test's database (`make_registry`: SQLite and PostgreSQL), with a token of every role;
- `browser`: Chromium launched for the test with the flags this closed network needs and
  a fresh profile (Playwright never downloads a browser here);
- `shoot(page, name)`: a screenshot of the page (into `SKILLREG_CONSOLE_SCREENSHOTS` when
  that is set, as `make console-screenshots` does for docs/console.md, else into the test's
  folder) and an axe-core accessibility check of it: no violation is allowed.

Nothing here waits on a timer: the server's start is an event, and pages are awaited on
their content (Playwright's `expect`).
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from playwright.async_api import Browser, Page, async_playwright

from registry.api import Registry
from registry.domain.access import Role
from registry.http.app import create_app
from tests.console.site import OTHER, WS

ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = Path("/usr/bin/chromium")
AXE = ROOT / ".venv" / "npm" / "node_modules" / "axe-core" / "axe.min.js"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1100, "height": 760}
SHOTS = os.environ.get("SKILLREG_CONSOLE_SCREENSHOTS")


class _Server(uvicorn.Server):
    """uvicorn, announcing the moment it listens."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


@dataclass
class ConsoleSite:
    url: str
    registry: Registry
    tokens: dict[str, str] = field(default_factory=dict)
    other_tokens: dict[str, str] = field(default_factory=dict)

    def at(self, path: str) -> str:
        return self.url + path

    async def signin(self, page: Page, role: str = "owner") -> None:
        await page.goto(self.at("/console/signin"))
        await page.get_by_label("Access token").fill(self.tokens[role])
        await page.get_by_role("button", name="Sign in").click()
        await page.wait_for_url(f"**/console/{WS}/")


@pytest.fixture
async def console_site(make_registry) -> AsyncIterator[Callable[..., Awaitable[ConsoleSite]]]:
    running: list[tuple[_Server, asyncio.Task[None]]] = []

    async def start(**registry_options: Any) -> ConsoleSite:
        registry = await make_registry(**registry_options)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            create_app(registry, jobs=True), log_level="warning", access_log=False
        )
        server = _Server(config)
        task = asyncio.create_task(server.serve(sockets=[sock]))
        started = asyncio.create_task(server.ready.wait())
        await asyncio.wait({task, started}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()
        running.append((server, task))
        site = ConsoleSite(f"http://127.0.0.1:{port}", registry)
        for role in Role:
            issued = await registry.tokens.create(WS, role.value, name=role.value, actor="test")
            site.tokens[role.value] = issued.token
            issued = await registry.tokens.create(OTHER, role.value, name=role.value, actor="test")
            site.other_tokens[role.value] = issued.token
        return site

    yield start
    for server, task in running:
        server.should_exit = True
        await task


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail("the browser tests need Debian's Chromium: run `make browser-deps` (root)")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=FLAGS
        )
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport=VIEWPORT)
    opened = await context.new_page()
    dialogs: list[str] = []
    opened.on("dialog", lambda d: dialogs.append(d.message))
    try:
        yield opened
    finally:
        await context.close()
    assert not dialogs, f"a page opened a dialog (a script ran): {dialogs}"


def _shrink(path: Path) -> None:
    """Keep committed screenshots small: a 64-colour palette is plenty for these pages."""
    from PIL import Image  # noqa: PLC0415 - only `make console-screenshots` needs it

    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


@pytest.fixture
def shoot(tmp_path: Path) -> Callable[[Page, str], Awaitable[None]]:
    if not AXE.exists():
        pytest.fail("the browser tests need axe-core: run `make browser-deps`")
    source = AXE.read_text(encoding="utf-8")
    folder = Path(SHOTS) if SHOTS else tmp_path

    async def take(page: Page, name: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        shot = folder / f"{name}.png"
        await page.screenshot(path=shot, full_page=True)
        if SHOTS:
            _shrink(shot)
        if await page.evaluate("typeof window.axe") == "undefined":
            await page.evaluate(source)
        found = await page.evaluate(
            "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
            ".map(v => `${v.id} (${v.impact}): ${v.nodes.map(n => n.target).join(' | ')}`)"
        )
        assert not found, f"accessibility violations on {name}: {found}"
        assert await page.evaluate("window.__pwned") is None, "a hostile script ran"

    return take
