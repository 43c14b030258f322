"""The marketplace in the console: the catalog, installs, installed copies, and jobs."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Request
from starlette.responses import Response

from registry.api.types import CopyStatus
from registry.console import workspace as ws
from registry.console.render import url
from registry.console.routing import (
    ConsoleRoute,
    field,
    form_of,
    message_page,
    page,
    registry_of,
    see_other,
    viewer_of,
)
from registry.domain.model import Scope, check_scope_name
from registry.errors import InvalidName

router = APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)

CATALOG_PAGE = 100


@dataclass(frozen=True)
class InstalledCopy:
    agent: str
    copy: CopyStatus
    proposal: int | None


@router.get("/{workspace}/marketplace", name="console_marketplace")
async def marketplace(request: Request, workspace: str, after: str | None = None) -> Response:
    reg = registry_of(request)
    listings = await reg.marketplace.list_listings(limit=CATALOG_PAGE, after=after)
    copies: list[InstalledCopy] = []
    for group in await ws.skills_by_agent(reg, workspace):
        scope = Scope(workspace, group.agent)
        for row in group.skills:
            if row.skill.kind != "installed":
                continue
            status = await reg.skill_status(scope, row.skill.slug)
            copy = await reg.marketplace.copy_status(scope, row.skill.slug)
            copies.append(InstalledCopy(group.agent, copy, status.proposal))
    return page(
        request,
        "marketplace.html",
        title="Marketplace",
        listings=listings,
        copies=copies,
        agents=await reg.agents(workspace),
    )


@router.post("/{workspace}/marketplace", name="console_install")
async def install(request: Request, workspace: str) -> Response:
    form = await form_of(request)
    listing, agent = field(form, "listing"), field(form, "agent").strip() or "personal"
    try:
        check_scope_name("agent", agent)
    except InvalidName as exc:
        return message_page(request, 422, "Refused", str(exc))
    queued = await registry_of(request).marketplace.enqueue_install(
        Scope(workspace, agent), listing, actor=viewer_of(request).actor
    )
    return see_other(url(workspace, "jobs", queued.job.id))


@router.get("/{workspace}/jobs/{job}", name="console_job")
async def job(request: Request, workspace: str, job: int) -> Response:
    found = await registry_of(request).marketplace.job(job)
    if found.workspace != workspace:
        # Another workspace's job is as missing as one that does not exist.
        return message_page(request, 404, "Not found", "There is nothing here.")
    payload, result = found.payload, found.result or {}
    agent = str(payload.get("agent", "personal"))
    slug = result.get("slug") or payload.get("slug") or payload.get("listing")
    return page(request, "job.html", title=f"Job #{job}", job=found, agent=agent, slug=slug)
