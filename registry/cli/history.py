"""History commands: history, diff, restore."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from registry.api.types import (
    DiffTarget,
    FileChange,
    HistoryPage,
    PackageDiff,
    ProposalRef,
    VersionSummary,
)
from registry.cli.archived import archived_option, archived_side, pinned, split_slug
from registry.cli.common import (
    VERSION,
    CliState,
    DecimalRange,
    agent_option,
    interrupt_safe_write,
    json_option,
    make_scope,
    parse_ref,
    row_id,
    run_async,
    version_number,
)
from registry.cli.output import Output, count, human_size, shown
from registry.domain.model import ArchivedVersion, Publication

actor_option = click.option("--actor", default="cli", show_default=True, help="Who acts.")


def parse_skill(ref: str) -> tuple[str, str]:
    """`WORKSPACE/SLUG` (no `@VERSION`) -> (workspace, slug)."""
    workspace, slug, version = parse_ref(ref)
    if version is not None:
        msg = f"{ref!r}: name the skill as WORKSPACE/SLUG, without '@VERSION'"
        raise click.BadParameter(msg)
    return workspace, slug


def parse_target(value: str) -> DiffTarget:
    """A version number `N`, or a proposal `pN` / `proposal:N`."""
    text = value.strip().lower()
    for prefix in ("proposal:", "p"):
        if text.startswith(prefix) and (proposal := row_id(text[len(prefix) :])) is not None:
            return ProposalRef(proposal)
    version = version_number(text)
    if version is not None:
        return version
    msg = f"{value!r}: expected a version number, or a proposal as pN"
    raise click.BadParameter(msg)


def _who(v: VersionSummary) -> str:
    """Who wrote a version: the authenticated principal, and the actor it declared if other."""
    if v.principal is None:
        return f"{v.actor} (declared; unsigned version)"
    if v.principal == v.actor:
        return v.principal
    return f"{v.principal} (declared {v.actor})"


def _render_history(page: HistoryPage, console: Console) -> None:
    # One line per version, like `git log --oneline`: a table would squeeze the messages.
    console.print(f"[bold]{page.scope.workspace}/{page.slug}[/]")
    for v in page.items:
        marks = []
        if v.head:
            marks.append("[bold green]head[/]")
        if v.restored_from is not None:
            marks.append(f"restored from {v.restored_from}")
        if v.archived:
            marks.append(f"[dim]archived, {page.slug}~{v.skill_id}[/]")
        if not v.available:
            marks.append(f"[red]unavailable: {shown(v.unavailable_because or '')}[/]")
        if v.revoked:
            marks.append(f"[red]revoked ({v.revoked_kind}): {shown(v.revoked_reason or '')}[/]")
        label = f" ({', '.join(marks)})" if marks else ""
        sources = f"  sources: {shown(', '.join(v.sources))}" if v.sources else ""
        console.print(
            f"[bold]{v.number}[/]{label}  {v.origin} by {shown(_who(v))}  "
            f"{v.created_at:%Y-%m-%d %H:%M:%S}  {v.file_count} files, "
            f"{human_size(v.total_size)}  [dim]{v.manifest_hash[:12]}[/]"
            + (f"  {shown(v.message)}" if v.message else "")
            + sources,
            soft_wrap=True,
        )
    if page.next_before:
        console.print(f"more: --before {page.next_before}")


@click.command()
@click.argument("ref")
@agent_option
@click.option("--limit", default=20, show_default=True, type=DecimalRange(1, 500))
@click.option("--before", help="Continue after this cursor (from the previous page).")
@click.option(
    "--archived",
    is_flag=True,
    help="Also list the versions of deleted skills, each with its SLUG~ID.",
)
@json_option
@run_async
async def history(
    state: CliState,
    out: Output,
    *,
    ref: str,
    agent: str,
    limit: int,
    before: str | None,
    archived: bool,
) -> None:
    """List the versions of REF (WORKSPACE/SLUG), newest first.

    WORKSPACE/SLUG~ID lists only the versions of that skill (a deleted one, by its id).
    """
    workspace, text = parse_skill(ref)
    slug, skill_id = split_slug(ref, text)
    if before is not None and not _is_cursor(before):
        msg = f"{before!r}: not a cursor from a previous page"
        raise click.BadParameter(msg, param_hint="--before")
    async with state.open() as reg:
        page = await reg.history(
            make_scope(workspace, agent),
            slug,
            limit=limit,
            before=before,
            include_archived=archived,
            skill_id=skill_id,
        )
    out.emit(page, lambda c: _render_history(page, c))


def _is_cursor(text: str) -> bool:
    """A history cursor as pages print it: `SKILL_ID.VERSION`."""
    skill_id, sep, version = text.partition(".")
    return bool(sep) and row_id(skill_id) is not None and version_number(version) is not None


_STATUS_MARK = {"added": ("A", "green"), "changed": ("M", "yellow"), "removed": ("D", "red")}


def _line_style(line: str) -> str:
    if line.startswith("@@"):
        return "cyan"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    return ""


def _describe(change: FileChange) -> str:
    if change.status == "added":
        return f"{human_size(change.new_size or 0)}, {(change.new_digest or '')[:12]}"
    if change.status == "removed":
        return f"{human_size(change.old_size or 0)}, {(change.old_digest or '')[:12]}"
    parts = []
    if change.old_digest != change.new_digest:
        parts.append(
            f"{human_size(change.old_size or 0)} -> {human_size(change.new_size or 0)}, "
            f"{(change.old_digest or '')[:12]} -> {(change.new_digest or '')[:12]}"
        )
    if change.old_executable != change.new_executable:
        parts.append("mode " + ("-x -> +x" if change.new_executable else "+x -> -x"))
    return "; ".join(parts)


def render_changes(files: list[FileChange], console: Console) -> None:
    """Print file changes with their diff lines, coloured when the console is a terminal."""
    for change in files:
        mark, colour = _STATUS_MARK[change.status]
        binary = "  [dim]binary[/]" if change.binary else ""
        console.print(
            f"[{colour}]{mark}[/]  [bold]{shown(change.path)}[/]  ({shown(_describe(change))})"
            + binary,
            soft_wrap=True,
        )
        # Diff lines are printed whole, tabs kept (the terminal wraps them), so a copied
        # hunk is still a valid patch; only a control or bidi character is shown escaped.
        for line in change.lines:
            style = _line_style(line)
            text = "\t".join(shown(part, len(part) * 6) for part in line.split("\t"))
            console.print(f"    [{style}]{text}[/]" if style else f"    {text}", soft_wrap=True)
        if change.truncated:
            console.print(f"    [dim]... {change.omitted} more lines (--full shows all)[/]")


def _render_diff(diff: PackageDiff, workspace: str, console: Console) -> None:
    console.print(
        f"[bold]{workspace}/{diff.slug}[/] {diff.a.label} -> {diff.b.label}: "
        f"{diff.count('added')} added, {diff.count('changed')} changed, "
        f"{diff.count('removed')} removed"
    )
    if diff.identical:
        console.print("identical packages")
    render_changes(diff.files, console)


def _side(value: str, skill_id: int | None, *, archived: bool) -> DiffTarget:
    """A diff side: `~ID@N` (a deleted skill's version), `pN`, or a number of REF's skill."""
    named = archived_side(value)
    if named is not None:
        return named
    target = parse_target(value)
    if isinstance(target, int) and (archived or skill_id is not None):
        return ArchivedVersion(target, skill_id)
    return target


@click.command()
@click.argument("ref")
@click.argument("a")
@click.argument("b")
@agent_option
@click.option("--full", is_flag=True, help="The whole unified diff of every text file.")
@archived_option
@json_option
@run_async
async def diff(
    state: CliState,
    out: Output,
    *,
    ref: str,
    a: str,
    b: str,
    agent: str,
    full: bool,
    archived: bool,
) -> None:
    """Compare versions A and B of REF (WORKSPACE/SLUG); a proposal is written pN.

    With SLUG~ID (or --archived) the numbers are the deleted skill's versions; a side
    written ~ID@N is version N of deleted skill ID, so `diff W/SLUG ~7@2 5` compares it
    with the live skill's version 5.
    """
    workspace, text = parse_skill(ref)
    slug, skill_id = split_slug(ref, text)
    side_a = _side(a, skill_id, archived=archived)
    side_b = _side(b, skill_id, archived=archived)
    async with state.open() as reg:
        result = await reg.diff(make_scope(workspace, agent), slug, side_a, side_b, full=full)
    out.emit(result, lambda c: _render_diff(result, workspace, c))


def publication_dict(pub: Publication) -> dict[str, Any]:
    return {
        "version": pub.version,
        "manifest_hash": pub.manifest_hash,
        "created": pub.created,
        "retired": pub.retired,
        "unchanged": pub.unchanged,
        "uploaded": pub.uploaded,
        "uploaded_bytes": pub.uploaded_bytes,
        "proposal": pub.proposal,
    }


@click.command()
@click.argument("ref")
@click.argument("version", type=VERSION)
@click.option(
    "--expect-head",
    "expect",
    required=True,
    type=VERSION,
    help="The current head (a deleted skill's: its last version).",
)
@agent_option
@actor_option
@click.option("-m", "--message", default="", help="A message stored with the new version.")
@archived_option
@json_option
@run_async
async def restore(
    state: CliState,
    out: Output,
    *,
    ref: str,
    version: int,
    expect: int,
    agent: str,
    actor: str,
    message: str,
    archived: bool,
) -> None:
    """Make VERSION of REF (WORKSPACE/SLUG) the head again, as a new version.

    SLUG~ID (or --archived) brings a deleted skill back: the same skill, live again, its
    history continued; refused (exit 4) if another live skill has the slug now.
    """
    workspace, text = parse_skill(ref)
    slug, skill_id = split_slug(ref, text)
    restored = pinned(ref, skill_id, version, archived=archived)
    assert restored is not None
    async with state.open() as reg, interrupt_safe_write(f"{workspace}/{slug}"):
        pub = await reg.restore(
            make_scope(workspace, agent),
            slug,
            restored,
            expected_head=expect,
            actor=actor,
            message=message,
        )
    revived = isinstance(restored, ArchivedVersion)
    data = {
        "workspace": workspace,
        "agent": agent,
        "slug": slug,
        "restored_from": version,
        "revived": revived,
    }
    if pub.unchanged:
        line = f"{slug}: version {version} is already the head's package (version {pub.version})"
    else:
        line = (
            f"{slug}: {'brought the deleted skill back, ' if revived else ''}"
            f"restored version {version} as version {pub.version} "
            f"({pub.manifest_hash[:12]}; {count(pub.uploaded, 'blob')} uploaded)"
        )
    out.emit({**data, **publication_dict(pub)}, lambda c: c.print(line))


COMMANDS = (history, diff, restore)
