"""The HTTP app: `create_app(registry)` assembles routes, problems, limits and metrics.

The app has no logic of its own beyond HTTP: every endpoint calls one `Registry` method.
It does not own the registry it is given (`skillreg serve` opens and closes it); its
lifespan checks, at startup, that the database schema is current, applies the pending
writes a raised capacity now has room for, and, with `jobs=True`,
runs a job worker (marketplace installs and updates) beside the requests until shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema

from registry import __version__, console
from registry.api import Registry
from registry.http import problems
from registry.http.limits import BodyLimit
from registry.http.metrics import Metrics, RequestMetrics
from registry.http.problems import PROBLEM_JSON
from registry.http.routes import (
    blobs,
    clawhub,
    discovery,
    history,
    learning,
    marketplace,
    operations,
    proposals,
    rescan,
    revocations,
    search,
    skills,
    targets,
    trust,
    wellknown,
    wellknown_legacy,
)
from registry.http.routes.discovery import DiscoverySettingsBody
from registry.http.routes.history import RestoreBody, StateChange
from registry.http.routes.learning import DecisionBatch, LoadBody
from registry.http.routes.proposals import DecisionBody
from registry.http.routes.rescan import RescanRequest, ReviewApproval
from registry.http.schemas import (
    InstallRequest,
    ManifestBody,
    PackageMeta,
    Problem,
    UpdateRequest,
)
from registry.http.throttle import AuthFailures
from registry.wire import RecordRequest, TargetRegistration

TITLE: Final = "skill-registry"
DESCRIPTION: Final = (
    "Transactional storage for agent skill packages. Every write is conditional "
    "(If-Match / If-None-Match: *); errors are application/problem+json with a stable "
    "`code`. See docs/http.md."
)
# Schemas the routes reference by hand (bodies they parse themselves, problems).
_EXTRA_SCHEMAS: Final = (
    ManifestBody,
    PackageMeta,
    RestoreBody,
    StateChange,
    DecisionBody,
    RescanRequest,
    ReviewApproval,
    InstallRequest,
    UpdateRequest,
    DecisionBatch,
    LoadBody,
    DiscoverySettingsBody,
    TargetRegistration,
    RecordRequest,
    Problem,
)
# Seconds a shutting-down worker may take to finish its job before it is interrupted
# (an interrupted worker hands the job back at once; docs/marketplace.md).
JOB_STOP_GRACE: Final = 10.0

_log = logging.getLogger("registry.http")


async def run_job_worker(registry: Registry, stop: asyncio.Event) -> None:
    """Run due jobs until `stop` is set; a failed poll (the database away) is retried."""
    while not stop.is_set():
        try:
            await registry.marketplace.run_jobs(stop=stop)
        except Exception:  # noqa: BLE001 - the worker outlives an outage; the log says why
            _log.warning("the job worker failed; it polls again", exc_info=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), registry.settings.job_poll_interval)


def create_app(
    registry: Registry, *, metrics: Metrics | None = None, jobs: bool = False
) -> FastAPI:
    """The ASGI app serving `registry`; `jobs`: run a job worker while it serves."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await registry.check_schema()
        # Pending writes wait for room; a capacity raised with this start is room.
        await registry.learning.apply_pending_writes()
        # Content rules other than the last rescan's: queue a rescan of everything (a
        # worker, this one with `jobs` or `skillreg jobs run`, runs it).
        await registry.rescan.start_if_rules_changed()
        if not jobs:
            yield
            return
        stop = asyncio.Event()
        worker = asyncio.create_task(run_job_worker(registry, stop), name="job-worker")
        try:
            yield
        finally:
            stop.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(worker, JOB_STOP_GRACE)

    app = FastAPI(
        title=TITLE,
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
        lifespan=lifespan,
        # Operation ids are the route names, which the role table is keyed by.
        generate_unique_id_function=lambda route: route.name,
        # Starlette answers a path with its trailing slash toggled by a redirect to an
        # absolute URL built from the request's `Host` header, which the client chooses:
        # `Location` never comes from `Host` (docs/http.md), so paths are exact here.
        redirect_slashes=False,
    )
    app.state.registry = registry
    app.state.metrics = metrics or Metrics()
    app.state.auth_failures = AuthFailures(
        limit=registry.settings.auth_failure_limit, window=registry.settings.auth_failure_window
    )
    problems.install(app)
    for router in (
        operations.router,
        skills.router,
        history.router,
        revocations.router,
        proposals.router,
        learning.router,
        blobs.router,
        targets.router,
        *marketplace.routers,
        rescan.router,
        search.router,
        discovery.router,
        wellknown.router,
        wellknown_legacy.router,
        trust.router,
        clawhub.router,
    ):
        app.include_router(router)
    console.install(app, registry)  # the web console under /console/, outside OpenAPI
    # Starlette runs the middleware added last first: metrics see every response,
    # the body limit's early 413s included.
    app.add_middleware(BodyLimit, settings=registry.settings, metrics=app.state.metrics)
    app.add_middleware(RequestMetrics, metrics=app.state.metrics)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = openapi_document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def openapi_document(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document of `app` (what `/openapi.json` serves and docs/ keeps)."""
    document = get_openapi(
        title=TITLE,
        version=__version__,
        description=DESCRIPTION,
        routes=app.routes,
    )
    _, defs = models_json_schema(
        [(model, "validation") for model in _EXTRA_SCHEMAS],
        ref_template="#/components/schemas/{model}",
    )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in defs.get("$defs", {}).items():
        schemas.setdefault(name, schema)
    # FastAPI documents its own validation error; this app answers a problem instead.
    problem = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for item in document.get("paths", {}).values():
        for operation in item.values():
            invalid = operation.get("responses", {}).get("422")
            if invalid is not None:
                invalid["content"] = problem
                if invalid.get("description") == "Validation Error":
                    invalid["description"] = "Parameters or body invalid, or input refused"
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    return document
