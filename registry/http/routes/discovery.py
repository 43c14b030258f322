"""A scope's discovery settings: what it publishes in its Agent Skills index, and to whom.

`PUT .../discovery` replaces the settings, conditionally like every write: `If-None-Match:
*` the first time, `If-Match: "<revision>"` after (412 with the current revision when
stale, 428 with neither). The ETag a scope never configured advertises, `"0"`, is an
`If-Match` too: it configures the scope only if nobody did meanwhile, as `If-None-Match: *`
does (`If-Match: *` needs settings that were configured). A tag that names no revision
(not ASCII digits, or past the 32-bit column) matches nothing: 412. The index itself is served by
registry/http/routes/wellknown.py.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Final

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from registry.api.types import DiscoverySettings
from registry.domain.model import ANY, ExpectedHead
from registry.domain.numbers import MAX_VERSION, decimal
from registry.http.auth import Caller, authorize, registry_of
from registry.http.preconditions import parse_condition
from registry.http.problems import HttpProblem
from registry.http.routes.common import (
    DEFAULT,
    Agent,
    Workspace,
    json_body,
    json_request_body,
    make_scope,
    problems,
)
from registry.http.routes.wellknown import PREFIX
from registry.http.schemas import SLUG_PATTERN

router = APIRouter(prefix="/v1/workspaces/{workspace}", tags=["discovery"])

Authorized = Annotated[Caller, Depends(authorize)]
# The settings' revision is a 32-bit column, as a version number is.
MAX_REVISION: Final = MAX_VERSION
SlugItem = Annotated[str, Field(pattern=SLUG_PATTERN, max_length=64)]


class DiscoverySettingsBody(BaseModel):
    """`PUT .../discovery`: the whole settings (what is not given is off)."""

    model_config = ConfigDict(extra="forbid")

    everything: bool = Field(default=False, description="publish every skill of the scope")
    public: bool = Field(default=False, description="serve the index without a token")
    skills: list[SlugItem] = Field(
        default_factory=list, max_length=1000, description="skills published one by one"
    )


class DiscoverySettingsView(BaseModel):
    """A scope's discovery settings; `revision` 0: never configured, nothing published."""

    workspace: str
    agent: str
    enabled: bool
    everything: bool
    public: bool
    skills: list[str]
    revision: int
    etag: str
    index: str = Field(description="the index's path on this host")
    updated_at: datetime | None
    updated_by: str | None

    @classmethod
    def of(cls, settings: DiscoverySettings) -> DiscoverySettingsView:
        scope = settings.scope
        return cls(
            workspace=scope.workspace,
            agent=scope.agent,
            enabled=settings.enabled,
            everything=settings.everything,
            public=settings.public,
            skills=list(settings.skills),
            revision=settings.revision,
            etag=_etag(settings.revision),
            index=PREFIX.format(workspace=scope.workspace, agent=scope.agent) + "/index.json",
            updated_at=settings.updated_at,
            updated_by=settings.updated_by,
        )


def _etag(revision: int) -> str:
    return f'"{revision}"'


def _response(settings: DiscoverySettings) -> Response:
    view = DiscoverySettingsView.of(settings)
    return JSONResponse(view.model_dump(mode="json"), headers={"ETag": view.etag})


@router.get(
    "/discovery",
    name="get_discovery_settings",
    summary="What the scope publishes in its discovery index, with its ETag",
    response_model=DiscoverySettingsView,
    responses=problems(400, 403, 404),
)
async def get_discovery_settings(
    request: Request, workspace: Workspace, caller: Authorized, agent: Agent = DEFAULT
) -> Response:
    """The settings; their `ETag` is what a change's `If-Match` takes."""
    del caller
    settings = await registry_of(request).discovery.settings(make_scope(workspace, agent))
    return _response(settings)


def _expected(request: Request, current: DiscoverySettings) -> ExpectedHead:
    if_match = request.headers.get("if-match")
    if if_match is not None:
        condition = parse_condition(if_match)
        if condition.any and current.enabled:
            return ANY
        # A tag that is no revision (not ASCII digits, or past the column) matches nothing.
        revisions = {decimal(t.strip('"'), MAX_REVISION) for t in condition.tags}
        if current.revision in revisions:
            # "0", what GET advertises before the scope is configured, is a compare-and-swap
            # on "never configured", as `If-None-Match: *` is.
            return current.revision if current.enabled else None
        raise HttpProblem(
            "precondition_failed",
            f"If-Match does not match the settings' ETag {_etag(current.revision)}",
            headers={"ETag": _etag(current.revision)},
            extra={"current_etag": _etag(current.revision)},
        )
    if request.headers.get("if-none-match", "").strip() == "*":
        return None
    raise HttpProblem(
        "precondition_required",
        "send If-Match with the settings' ETag, or If-None-Match: * to configure a new scope",
    )


@router.put(
    "/discovery",
    name="put_discovery_settings",
    summary="Replace what the scope publishes (If-Match, or If-None-Match: * the first time)",
    response_model=DiscoverySettingsView,
    responses=problems(400, 403, 404, 412, 422, 428, 429),
    openapi_extra=json_request_body(DiscoverySettingsBody),
)
async def put_discovery_settings(
    request: Request,
    *,
    workspace: Workspace,
    caller: Authorized,
    agent: Agent = DEFAULT,
) -> Response:
    """Publish everything or the skills listed, publicly or not; one event per change."""
    body = await json_body(request, DiscoverySettingsBody)
    registry = registry_of(request)
    scope = make_scope(workspace, agent)
    expected = _expected(request, await registry.discovery.settings(scope))
    settings = await registry.discovery.update(
        scope,
        actor=caller.actor,
        everything=body.everything,
        public=body.public,
        skills=body.skills,
        expected_revision=expected,
    )
    return _response(settings)
