"""The owner's actions on a skill: edit, restore, yank, controls, delete, approvals, update.

Each action is one `Registry` call. The page it came from says which head it was looking
at, and the call is a compare-and-swap on that head wherever the registry offers one: a
restore or a delete whose head moved since is refused and says so, and an edit whose head
moved keeps the draft (`keep_draft`) and shows how it differs from the new head.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.datastructures import FormData
from starlette.responses import Response

from registry.api.types import ProposalRef
from registry.console.render import url
from registry.console.routes.skill import SKILL, skill_context
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
from registry.domain.approvals import FindingRef
from registry.domain.model import ArchivedVersion, PackageFile, Scope
from registry.domain.numbers import MAX_VERSION, decimal
from registry.domain.states import Action
from registry.domain.textdiff import is_text
from registry.errors import (
    ContentBlocked,
    DraftKept,
    HeadConflict,
    RefusedInput,
    SlugTaken,
    StateConflict,
)

router = APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)


def number(form: FormData, name: str) -> int | None:
    """A version the form names (ASCII digits, at most `MAX_VERSION`), else None."""
    return decimal(field(form, name), MAX_VERSION)


def findings(form: FormData) -> list[FindingRef]:
    """The findings a form approves, each sent as `ordinal:path` (others are left out)."""
    out = []
    for value in form.getlist("finding"):
        text, _, path = str(value).partition(":")
        ordinal = decimal(text, MAX_VERSION)
        if ordinal is not None and path:
            out.append(FindingRef(path, ordinal))
    return out


def as_sent(text: str, original: bytes) -> bytes:
    """A textarea's text as file bytes: browsers send CRLF line ends, files keep their own."""
    if b"\r\n" not in original:
        text = text.replace("\r\n", "\n")
    return text.encode("utf-8")


# ---------------------------------------------------------------- edit


@router.get(SKILL + "/edit", name="console_edit_form")
async def edit_form(
    request: Request, workspace: str, agent: str, slug: str, path: str = "SKILL.md"
) -> Response:
    package = await registry_of(request).read_package(Scope(workspace, agent), slug)
    found = package.files.get(path)
    if found is None:
        return message_page(request, 404, "Not found", f"v{package.version} has no file {path}.")
    if not is_text(found.data):
        return message_page(request, 422, "Not editable", f"{path} is not a text file.")
    return _edit_page(
        request, agent, slug, path=path, base=package.version, content=found.data.decode()
    )


def _edit_page(
    request: Request, agent: str, slug: str, *, status: int = 200, **context: Any
) -> Response:
    context.setdefault("message", "")
    context.setdefault("keep_auto", False)
    context.setdefault("approved", [])
    return page(
        request, "edit.html", status=status, title=f"Edit {slug}", agent=agent, slug=slug, **context
    )


@router.post(SKILL + "/edit", name="console_edit")
async def edit(request: Request, workspace: str, agent: str, slug: str) -> Response:
    reg = registry_of(request)
    scope = Scope(workspace, agent)
    form = await form_of(request)
    path, base = field(form, "path"), number(form, "base")
    if base is None:
        return message_page(request, 400, "Refused", "The form names no version.")
    package = await reg.read_package(scope, slug, base)
    original = package.files.get(path)
    if original is None:
        return message_page(request, 404, "Not found", f"v{base} has no file {path}.")
    data = as_sent(field(form, "content"), original.data)
    files = dict(package.files)
    files[path] = PackageFile(data, executable=original.executable)
    approved = findings(form)
    draft: dict[str, Any] = {
        "path": path,
        "base": base,
        "content": data.decode("utf-8"),
        "message": field(form, "message"),
        "keep_auto": field(form, "keep_auto") == "on",
        "approved": approved,
    }
    try:
        published = await reg.edit(
            scope,
            slug,
            files,
            base_version=base,
            actor=viewer_of(request).actor,
            message=draft["message"],
            keep_auto_improve=draft["keep_auto"],
            keep_draft=True,
            approve=approved,
        )
    except DraftKept as exc:
        head = exc.current if exc.current is not None else base
        changes = await reg.diff(scope, slug, head, ProposalRef(exc.proposal))
        draft |= {"base": head, "moved_from": base, "kept": exc.proposal, "changes": changes}
        return _edit_page(request, agent, slug, status=409, **draft)
    except ContentBlocked as exc:
        return _edit_page(request, agent, slug, status=422, blocked=exc, **draft)
    except RefusedInput as exc:
        return _edit_page(request, agent, slug, status=422, error=str(exc), **draft)
    notice = "unchanged" if published.unchanged else "edited"
    return see_other(skill_url(workspace, agent, slug, notice=notice))


# ---------------------------------------------------------------- yank and unyank


@router.post(SKILL + "/yank", name="console_yank")
async def yank(request: Request, workspace: str, agent: str, slug: str) -> Response:
    """Revoke a version (docs/revocation.md); a revoked head moves back as a new version."""
    form = await form_of(request)
    version = number(form, "version")
    if version is None:
        return message_page(request, 400, "Refused", "The form names no version.")
    await registry_of(request).yank(
        Scope(workspace, agent),
        slug,
        version,
        kind=field(form, "kind"),
        reason=field(form, "reason"),
        actor=viewer_of(request).actor,
    )
    return see_other(skill_url(workspace, agent, slug, "history", notice="yanked"))


@router.post(SKILL + "/unyank", name="console_unyank")
async def unyank(request: Request, workspace: str, agent: str, slug: str) -> Response:
    form = await form_of(request)
    version = number(form, "version")
    if version is None:
        return message_page(request, 400, "Refused", "The form names no version.")
    scope = Scope(workspace, agent)
    await registry_of(request).unyank(scope, slug, version, actor=viewer_of(request).actor)
    return see_other(skill_url(workspace, agent, slug, "history", notice="unyanked"))


# ---------------------------------------------------------------- restore


@router.post(SKILL + "/restore", name="console_restore")
async def restore(request: Request, workspace: str, agent: str, slug: str) -> Response:
    reg = registry_of(request)
    scope = Scope(workspace, agent)
    form = await form_of(request)
    version, expected = number(form, "version"), number(form, "expected_head")
    if version is None or expected is None:
        return message_page(request, 400, "Refused", "The form names no version or head.")
    try:
        published = await reg.restore(
            scope, slug, version, expected_head=expected, actor=viewer_of(request).actor
        )
    except HeadConflict as exc:
        found = await reg.history(scope, slug, limit=50, include_archived=True)
        return page(
            request,
            "history.html",
            status=409,
            title=f"History of {slug}",
            agent=agent,
            slug=slug,
            history=found,
            error=(
                f"Not restored: the head moved from v{expected} to v{exc.current} since the "
                f"page was loaded. Nothing was overwritten. The history below shows the new "
                f"head; restore v{version} again if you still want it."
            ),
        )
    notice = "unchanged" if published.unchanged else "restored"
    return see_other(skill_url(workspace, agent, slug, "history", notice=notice))


@router.post(SKILL + "/archived/{skill_id}/restore", name="console_revive")
async def revive(
    request: Request, workspace: str, agent: str, slug: str, skill_id: int
) -> Response:
    """Bring a deleted skill back with one of its versions (docs/history.md, "Deleted skills").

    A compare-and-swap on the deleted skill's last version, as the page showed it; a slug
    another live skill holds now is refused (409) and nothing changes.
    """
    reg = registry_of(request)
    scope = Scope(workspace, agent)
    form = await form_of(request)
    version, expected = number(form, "version"), number(form, "expected_head")
    if version is None or expected is None:
        return message_page(request, 400, "Refused", "The form names no version or head.")
    try:
        await reg.restore(
            scope,
            slug,
            ArchivedVersion(version, skill_id),
            expected_head=expected,
            actor=viewer_of(request).actor,
        )
    except SlugTaken as exc:
        return message_page(
            request,
            409,
            "Not brought back",
            f"The slug {slug} is the live skill {exc.live_skill} now (v{exc.live_head}): the "
            "deleted skill cannot come back under it. Nothing was changed.",
        )
    except HeadConflict:
        return message_page(
            request,
            409,
            "Not brought back",
            f"{slug}~{skill_id} changed since the page was loaded (it may be back already). "
            "Nothing was overwritten; open its history again.",
        )
    return see_other(skill_url(workspace, agent, slug, "history", notice="restored"))


# ---------------------------------------------------------------- controls and delete


@router.post(SKILL + "/control", name="console_control")
async def control(request: Request, workspace: str, agent: str, slug: str) -> Response:
    form = await form_of(request)
    try:
        action = Action(field(form, "action"))
    except ValueError:
        return message_page(request, 400, "Refused", "That is no action the console knows.")
    if action is Action.DELETE:
        return message_page(request, 400, "Refused", "Deleting asks for a confirmation first.")
    try:
        await registry_of(request).control(
            Scope(workspace, agent),
            slug,
            action,
            actor=viewer_of(request).actor,
            reason=field(form, "reason").strip(),
        )
    except StateConflict as exc:
        context = await skill_context(request, workspace, agent, slug)
        return page(
            request, "skill.html", status=409, title=f"Skill {slug}", error=str(exc), **context
        )
    return see_other(skill_url(workspace, agent, slug, notice=action.value))


@router.get(SKILL + "/delete", name="console_delete_form")
async def delete_form(request: Request, workspace: str, agent: str, slug: str) -> Response:
    status = await registry_of(request).skill_status(Scope(workspace, agent), slug)
    return page(
        request, "delete.html", title=f"Delete {slug}", agent=agent, slug=slug, skill_status=status
    )


@router.post(SKILL + "/delete", name="console_delete")
async def delete(request: Request, workspace: str, agent: str, slug: str) -> Response:
    reg = registry_of(request)
    scope = Scope(workspace, agent)
    form = await form_of(request)
    expected = number(form, "expected_head")
    if field(form, "confirm").strip() != slug or expected is None:
        status = await reg.skill_status(scope, slug)
        return page(
            request,
            "delete.html",
            status=422,
            title=f"Delete {slug}",
            agent=agent,
            slug=slug,
            skill_status=status,
            error=f"Not deleted: type the skill's name, {slug}, to confirm.",
        )
    try:
        await reg.delete(scope, slug, actor=viewer_of(request).actor, expected_head=expected)
    except HeadConflict as exc:
        status = await reg.skill_status(scope, slug)
        return page(
            request,
            "delete.html",
            status=409,
            title=f"Delete {slug}",
            agent=agent,
            slug=slug,
            skill_status=status,
            error=(
                f"Not deleted: the head moved from v{expected} to v{exc.current} since the "
                "page was loaded. Look at the new head, then confirm again."
            ),
        )
    return see_other(url(workspace, "", notice="deleted"))


# ---------------------------------------------------------------- approvals and updates


@router.post(SKILL + "/approve", name="console_approve")
async def approve(request: Request, workspace: str, agent: str, slug: str) -> Response:
    form = await form_of(request)
    version, chosen = number(form, "version"), findings(form)
    if version is None or not chosen:
        return message_page(request, 400, "Refused", "Name a version and a finding to approve.")
    await registry_of(request).approve_findings(
        Scope(workspace, agent), slug, version, chosen, actor=viewer_of(request).actor
    )
    return see_other(skill_url(workspace, agent, slug, notice="approved"))


@router.post(SKILL + "/update", name="console_update")
async def update(request: Request, workspace: str, agent: str, slug: str) -> Response:
    queued = await registry_of(request).marketplace.enqueue_update(
        Scope(workspace, agent), slug, actor=viewer_of(request).actor
    )
    return see_other(url(workspace, "jobs", queued.job.id))
