"""One proposal: what it changes against its base and the head, and the owner's decision."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from registry.console.routes.actions import as_sent
from registry.console.routing import (
    ConsoleRoute,
    field,
    form_of,
    message_page,
    page,
    registry_of,
    see_other,
    skill_url,
    viewer_of,
)
from registry.domain.model import PackageFile, Scope
from registry.domain.textdiff import is_text
from registry.errors import Conflict, RefusedInput

router = APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)

PROPOSAL = "/{workspace}/agents/{agent}/proposals/{proposal}"
_NOTICES = {"apply": "applied", "alternative": "alternative", "keep_current": "kept"}


async def _page(
    request: Request,
    workspace: str,
    agent: str,
    proposal: int,
    *,
    full: bool = False,
    status: int = 200,
    **extra: Any,
) -> Response:
    reg = registry_of(request)
    scope = Scope(workspace, agent)
    detail = await reg.proposal(scope, proposal, full=full)
    files = await reg.read_proposal(scope, proposal)
    editable = {p: f.data.decode() for p, f in files.items() if is_text(f.data)}
    extra.setdefault("path", "SKILL.md" if "SKILL.md" in editable else next(iter(editable), ""))
    extra.setdefault("content", editable.get(extra["path"], ""))
    return page(
        request,
        "proposal.html",
        status=status,
        title=f"Proposal #{proposal}",
        agent=agent,
        slug=detail.summary.slug,
        detail=detail,
        editable=sorted(editable),
        full=full,
        **extra,
    )


@router.get(PROPOSAL, name="console_proposal")
async def proposal(
    request: Request,
    workspace: str,
    agent: str,
    proposal: int,
    *,
    full: bool = False,
    path: str | None = None,
) -> Response:
    if path is None:
        return await _page(request, workspace, agent, proposal, full=full)
    return await _page(request, workspace, agent, proposal, full=full, path=path)


@router.post(PROPOSAL, name="console_decide")
async def decide(request: Request, workspace: str, agent: str, proposal: int) -> Response:
    reg = registry_of(request)
    scope = Scope(workspace, agent)
    form = await form_of(request)
    decision = field(form, "decision")
    files: dict[str, PackageFile] | None = None
    extra: dict[str, Any] = {}
    if decision == "alternative":
        files = await reg.read_proposal(scope, proposal)
        path = field(form, "path")
        original = files.get(path)
        if original is None:
            return message_page(request, 404, "Not found", f"The proposal has no file {path}.")
        data = as_sent(field(form, "content"), original.data)
        files[path] = PackageFile(data, executable=original.executable)
        extra = {"path": path, "content": data.decode("utf-8")}
    elif decision not in ("apply", "keep_current"):
        return message_page(request, 400, "Refused", "That is no decision the console knows.")
    try:
        result = await reg.decide(
            scope,
            proposal,
            decision,  # type: ignore[arg-type]
            actor=viewer_of(request).actor,
            files=files,
        )
    except (Conflict, RefusedInput) as exc:
        return await _page(
            request, workspace, agent, proposal, status=409, error=f"Not decided: {exc}", **extra
        )
    detail = await reg.proposal(scope, result.proposal)
    return see_other(
        skill_url(workspace, agent, detail.summary.slug, notice=_NOTICES[result.decision])
    )
