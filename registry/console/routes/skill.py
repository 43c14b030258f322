"""A skill's pages: summary and controls, a file, the history, a diff."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from registry.api.types import DiffTarget, Package, ProposalRef
from registry.console.render import has_hidden
from registry.console.routing import (
    ConsoleRoute,
    message_page,
    page,
    registry_of,
    see_other,
    skill_url,
)
from registry.console.tree import file_tree
from registry.domain.frontmatter import parse_skill_md
from registry.domain.model import ArchivedVersion, Scope
from registry.domain.numbers import MAX_ID, MAX_VERSION, decimal
from registry.domain.textdiff import is_text
from registry.errors import NotInstalled, RegistryError, VersionUnavailable

router = APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)

SKILL = "/{workspace}/agents/{agent}/skills/{slug}"
HISTORY_PAGE = 50


async def skill_context(
    request: Request, workspace: str, agent: str, slug: str, version: int | None = None
) -> dict[str, Any]:
    """What the skill page shows: status, the package (head or `version`), the summary."""
    reg = registry_of(request)
    scope = Scope(workspace, agent)
    status = await reg.skill_status(scope, slug)
    package: Package | None
    unavailable: str | None = None
    try:
        package = await reg.read_package(scope, slug, version)
    except VersionUnavailable as exc:
        if version is not None:
            raise
        package, unavailable = None, str(exc)
    summary: Any = None
    summary_error = None
    if package is not None and "SKILL.md" in package.files:
        try:
            summary = parse_skill_md(package.files["SKILL.md"].data, slug)
        except RegistryError as exc:
            summary_error = str(exc)
    try:
        copy = await reg.marketplace.copy_status(scope, slug)
    except NotInstalled:
        copy = None
    return {
        "agent": agent,
        "slug": slug,
        "skill_status": status,
        "package": package,
        "unavailable": unavailable,
        "summary": summary,
        "summary_error": summary_error,
        "tree": [] if package is None else file_tree(package.manifest),
        "total_size": 0 if package is None else package.manifest.total_size,
        "copy": copy,
        "recent": (await reg.history(scope, slug, limit=5)).items,
    }


@router.get(SKILL, name="console_skill")
async def skill(
    request: Request, workspace: str, agent: str, slug: str, version: int | None = None
) -> Response:
    context = await skill_context(request, workspace, agent, slug, version)
    return page(request, "skill.html", title=f"Skill {slug}", **context)


@router.get(SKILL + "/file", name="console_file")
async def file(
    request: Request,
    workspace: str,
    agent: str,
    slug: str,
    *,
    path: str,
    version: int | None = None,
    skill_id: int | None = None,
) -> Response:
    scope = Scope(workspace, agent)
    pinned = version if skill_id is None or version is None else ArchivedVersion(version, skill_id)
    package = await registry_of(request).read_package(scope, slug, pinned)
    found = package.files.get(path)
    if found is None:
        return message_page(request, 404, "Not found", f"v{package.version} has no file {path}.")
    entry = next(e for e in package.manifest.entries if e.path == path)
    text = found.data.decode("utf-8") if is_text(found.data) else None
    return page(
        request,
        "file.html",
        title=f"{path} of {slug}",
        agent=agent,
        slug=slug,
        package=package,
        path=path,
        entry=entry,
        lines=None if text is None else text.splitlines(),
        hidden=text is not None and has_hidden(text),
    )


@router.get(SKILL + "/history", name="console_history")
async def history(
    request: Request,
    workspace: str,
    agent: str,
    slug: str,
    before: str | None = None,
) -> Response:
    found = await registry_of(request).history(
        Scope(workspace, agent), slug, limit=HISTORY_PAGE, before=before, include_archived=True
    )
    return page(
        request, "history.html", title=f"History of {slug}", agent=agent, slug=slug, history=found
    )


@router.get(SKILL + "/archived/{skill_id}", name="console_archived")
async def archived(
    request: Request,
    workspace: str,
    agent: str,
    slug: str,
    skill_id: int,
    *,
    version: int | None = None,
) -> Response:
    """A version of a deleted skill of the slug (its last by default), and its files.

    The owner may bring the skill back from here while the slug is free.
    """
    reg = registry_of(request)
    scope = Scope(workspace, agent)
    versions = await reg.history(scope, slug, skill_id=skill_id, limit=HISTORY_PAGE)
    last = versions.items[0]
    if not last.archived:  # brought back since: it is the live skill
        return see_other(skill_url(workspace, agent, slug))
    number = last.number if version is None else version
    package = await reg.read_package(scope, slug, ArchivedVersion(number, skill_id))
    return page(
        request,
        "archived.html",
        title=f"Deleted {slug}~{skill_id}, v{package.version}",
        agent=agent,
        slug=slug,
        skill_id=skill_id,
        package=package,
        tree=file_tree(package.manifest),
        versions=versions.items,
        live_head=versions.head,
    )


def parse_target(text: str | None, default: int) -> DiffTarget | None:
    """`pN` is proposal N, a number is a version, nothing is `default`; else None.

    Numbers are ASCII digits within their column (`registry.domain.numbers.decimal`):
    `int()` reads other scripts' digits, refuses thousands of them with a `ValueError`.
    """
    if not text:
        return default
    if text.startswith("p"):
        proposal = decimal(text[1:], MAX_ID)
        return None if proposal is None else ProposalRef(proposal)
    return decimal(text, MAX_VERSION)


def target_text(target: DiffTarget) -> str:
    return f"p{target.id}" if isinstance(target, ProposalRef) else str(target)


@router.get(SKILL + "/diff", name="console_diff")
async def diff(
    request: Request,
    workspace: str,
    agent: str,
    slug: str,
    *,
    full: bool = False,
) -> Response:
    reg = registry_of(request)
    scope = Scope(workspace, agent)
    status = await reg.skill_status(scope, slug)
    query = request.query_params
    a = parse_target(query.get("from"), max(1, status.head - 1))
    b = parse_target(query.get("to"), status.head)
    if a is None or b is None:
        return message_page(
            request, 400, "Refused", "`from` and `to` name a version (N) or a proposal (pN)."
        )
    changes = await reg.diff(scope, slug, a, b, full=full)
    versions = (await reg.history(scope, slug, limit=100)).items
    return page(
        request,
        "diff.html",
        title=f"Diff of {slug}",
        agent=agent,
        slug=slug,
        skill_status=status,
        changes=changes,
        a=target_text(a),
        b=target_text(b),
        versions=versions,
        full=full,
    )
