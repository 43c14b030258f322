"""Pages of a whole workspace: the overview, search, decisions, and the operator's figures."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any, get_args

from fastapi import APIRouter, Request
from starlette.responses import Response

from registry.api.types import Decision
from registry.console import workspace as ws
from registry.console.render import url
from registry.console.routing import (
    ConsoleRoute,
    form_of,
    page,
    registry_of,
    viewer_of,
)
from registry.domain.numbers import MAX_ID, decimal

router = APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)

_BATCH: frozenset[str] = frozenset(get_args(Decision)) - {"alternative"}


@router.get("/{workspace}/", name="console_overview")
async def overview(request: Request, workspace: str) -> Response:
    reg = registry_of(request)
    agents = await ws.skills_by_agent(reg, workspace)
    decisions = await ws.open_decisions(reg, workspace)
    per_agent: dict[str, int] = {}
    by_skill: dict[tuple[str, str], int] = {}
    for d in decisions:
        per_agent[d.agent] = per_agent.get(d.agent, 0) + 1
        by_skill[d.agent, d.proposal.slug] = d.proposal.id
    return page(
        request,
        "overview.html",
        title=f"Workspace {workspace}",
        agents=agents,
        decisions=per_agent,
        decision_of=by_skill,
        pending=await ws.pending_writes(reg, workspace),
    )


@router.get("/{workspace}/search", name="console_search")
async def search(request: Request, workspace: str, q: str = "") -> Response:
    reg = registry_of(request)
    results = await ws.search(reg, workspace, q) if q.strip() else []
    return page(request, "search.html", title="Search", query=q, results=results)


@router.get("/{workspace}/decisions", name="console_decisions")
async def decisions(request: Request, workspace: str, agent: str | None = None) -> Response:
    found = await ws.open_decisions(registry_of(request), workspace, agent=agent)
    return page(request, "decisions.html", title="Open decisions", decisions=found, agent=agent)


@router.post("/{workspace}/decisions", name="console_decide_many")
async def decide_many(request: Request, workspace: str) -> Response:
    form = await form_of(request)
    decision = form.get("decision")
    items: list[ws.DecisionItem] = []
    for picked in form.getlist("pick"):
        agent, _, text = str(picked).rpartition(":")
        number = decimal(text, MAX_ID)
        if agent and number is not None and decision in _BATCH:
            items.append(ws.DecisionItem(agent, number, decision))  # type: ignore[arg-type]
    if not items:
        found = await ws.open_decisions(registry_of(request), workspace)
        return page(
            request,
            "decisions.html",
            status=422,
            title="Open decisions",
            decisions=found,
            agent=None,
            error="Choose at least one proposal, then apply or keep.",
        )
    reg = registry_of(request)
    outcomes = await ws.decide_many(reg, workspace, items, actor=viewer_of(request).actor)
    found = await ws.open_decisions(reg, workspace)
    return page(
        request,
        "decisions.html",
        title="Open decisions",
        decisions=found,
        agent=None,
        outcomes=outcomes,
    )


def _rows(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """A status dataclass flattened to (dotted name, value) rows, in field order."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, dict) and value:
        rows: list[tuple[str, Any]] = []
        for key, item in value.items():
            rows.extend(_rows(item, f"{prefix}{key}."))
        return rows
    return [(prefix.rstrip("."), _shown(value))]


def _shown(value: Any) -> Any:
    """A figure as one cell: a time to the second, a list as its items, nothing as a dash."""
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, list | tuple):
        return ", ".join(str(_shown(v)) for v in value) or None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return "/".join(str(_shown(getattr(value, f.name))) for f in dataclasses.fields(value))
    if value == {}:
        return None
    return value


@router.get("/{workspace}/operator", name="console_operator")
async def operator(request: Request, workspace: str) -> Response:
    reg = registry_of(request)
    # With the workspace: its learning section too (pending writes, decisions, ...).
    service = await reg.ops.service_status(workspace)
    sections = [
        (field.name, _rows(getattr(service, field.name)))
        for field in dataclasses.fields(service)
        if field.name != "generated_at" and getattr(service, field.name) is not None
    ]
    status = await reg.status(workspace)
    jobs = await reg.marketplace.list_jobs(workspace=workspace, limit=50)
    revoked = await reg.revoked_status(workspace)
    return page(
        request,
        "operator.html",
        title="Operator",
        generated_at=service.generated_at,
        sections=sections,
        pending=status.materialization.pending,
        targets=status.materialization.targets,
        jobs=jobs.items,
        revoked=revoked,
        job_url=lambda job_id: url(workspace, "jobs", job_id),
    )
