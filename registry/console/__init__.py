"""The owner's web console, served under `/console/` by `skillreg serve` (docs/console.md).

Server-rendered HTML with plain forms that work without JavaScript. It is a client of the
registry like the command line and the HTTP API: every page and action is one or a few
`Registry` calls, and no rule of the registry's lives here. It owns the web side only:
sessions and CSRF tokens (`session`), who may do what (`access`, the API's role table),
the request cycle (`routing`), escaping and URLs (`render`), the questions it asks of a
whole workspace (`workspace`), and the pages (`routes/`, `templates/`, `static/`).
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from registry.api import Registry
from registry.console.render import PREFIX
from registry.console.routes import actions, entry, marketplace, overview, proposals, skill
from registry.console.routing import Console

ROUTERS = (
    entry.router,
    overview.router,
    skill.router,
    actions.router,
    proposals.router,
    marketplace.router,
)


def install(app: FastAPI, registry: Registry) -> None:
    """Serve the console for `registry` under `/console/` in `app` (kept out of OpenAPI)."""
    app.state.console = Console(registry, registry.settings)
    # Mounted before the pages, so that no page pattern can shadow a stylesheet.
    app.mount(
        f"{PREFIX}/static",
        StaticFiles(packages=[("registry.console", "static")]),
        name="console_static",
    )
    for router in ROUTERS:
        app.include_router(router)
