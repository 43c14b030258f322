"""`skillreg proposals list|show|decide`: the owner's side of proposals."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from registry.api.folders import read_folder
from registry.api.types import Changes, Decision, DecisionResult, ProposalDetail, ProposalPage
from registry.cli.common import (
    FOLDER,
    ROW_ID,
    CliState,
    DecimalRange,
    agent_option,
    json_option,
    make_scope,
    run_async,
    workspace_option,
)
from registry.cli.history import actor_option, publication_dict, render_changes
from registry.cli.output import Output, human_size, shown


@click.group()
def proposals() -> None:
    """List, inspect and decide proposals (automated changes waiting for the owner)."""


def _changes(changes: Changes | None) -> str:
    if changes is None:
        return "-"
    return f"+{len(changes.added)} ~{len(changes.changed)} -{len(changes.removed)}"


def _render_page(page: ProposalPage, console: Console) -> None:
    if not page.items:
        console.print("no proposals")
        return
    table = Table(show_header=True, header_style="bold", box=None)
    for column in ("id", "skill", "status", "base", "head", "vs base", "vs head", "by", "size"):
        table.add_column(column)
    for p in page.items:
        table.add_row(
            str(p.id),
            p.slug,
            p.status,
            str(p.base_version),
            str(p.head),
            _changes(p.against_base),
            _changes(p.against_head),
            shown(f"{p.origin}/{p.actor}"),
            human_size(p.total_size),
        )
    console.print(table)
    if page.next_before:
        console.print(f"more: --before {page.next_before}")


@proposals.command(name="list")
@workspace_option(positional_alias=True, must_exist=True)
@agent_option
@click.option("--all", "everything", is_flag=True, help="Include decided and superseded ones.")
@click.option("--limit", default=50, show_default=True, type=DecimalRange(1, 200))
@click.option("--before", type=ROW_ID, help="Continue after this id (from the previous page).")
@json_option
@run_async
async def list_(
    state: CliState,
    out: Output,
    *,
    workspace: str,
    agent: str,
    everything: bool,
    limit: int,
    before: int | None,
) -> None:
    """List the proposals of WORKSPACE (pending ones unless --all)."""
    async with state.open() as reg:
        page = await reg.list_proposals(
            make_scope(workspace, agent), pending_only=not everything, limit=limit, before=before
        )
    out.emit(page, lambda c: _render_page(page, c))


def _render_detail(detail: ProposalDetail, console: Console) -> None:
    p = detail.summary
    console.print(
        f"[bold]proposal {p.id}[/] for {p.slug}: {p.status}, made on version "
        f"{p.base_version} (head {p.head}) by {shown(p.origin)}/{shown(p.actor)}"
        + (f": {shown(p.message)}" if p.message else "")
    )
    if p.decision:
        console.print(f"decided {p.decision} by {shown(p.decided_by or '')}")
    console.print(f"[bold]against its base (version {p.base_version})[/]")
    render_changes(detail.diff_base, console)
    if detail.diff_head is not None and p.head != p.base_version:
        console.print(f"[bold]against the head (version {p.head})[/]")
        render_changes(detail.diff_head, console)


@proposals.command()
@workspace_option(positional_alias=True, must_exist=True)
@click.argument("proposal", type=ROW_ID)
@agent_option
@click.option("--full", is_flag=True, help="Whole unified diffs instead of previews.")
@json_option
@run_async
async def show(
    state: CliState, out: Output, *, workspace: str, proposal: int, agent: str, full: bool
) -> None:
    """Show PROPOSAL of WORKSPACE with its diffs against its base and the head."""
    async with state.open() as reg:
        detail = await reg.proposal(make_scope(workspace, agent), proposal, full=full)
    out.emit(detail, lambda c: _render_detail(detail, c))


_DECISIONS: dict[str, Decision] = {
    "apply": "apply",
    "alternative": "alternative",
    "keep": "keep_current",
}


@proposals.command()
@workspace_option(positional_alias=True)
@click.argument("proposal", type=ROW_ID)
@click.argument("decision", type=click.Choice(sorted(_DECISIONS)))
@click.option(
    "--from",
    "directory",
    type=FOLDER,
    help="The edited package (a folder) for 'alternative'.",
)
@agent_option
@actor_option
@json_option
@run_async
async def decide(
    state: CliState,
    out: Output,
    *,
    workspace: str,
    proposal: int,
    decision: str,
    directory: Path | None,
    agent: str,
    actor: str,
) -> None:
    """Decide PROPOSAL: apply it, apply an edited alternative (--from DIR), or keep the head."""
    if (directory is not None) != (decision == "alternative"):
        msg = "--from DIR is required with 'alternative' and only allowed with it"
        raise click.UsageError(msg)
    files = None
    if directory is not None:
        files = await asyncio.to_thread(read_folder, directory, limits=state.settings.limits())
    async with state.open(write=f"skillreg proposals show -w {workspace} {proposal}") as reg:
        result = await reg.decide(
            make_scope(workspace, agent),
            proposal,
            _DECISIONS[decision],
            actor=actor,
            files=files,
        )
    out.emit(_decision_dict(result), lambda c: c.print(_decision_line(result)))


def _decision_dict(result: DecisionResult) -> dict[str, Any]:
    return {
        "proposal": result.proposal,
        "decision": result.decision,
        "status": result.status,
        "publication": None if result.publication is None else publication_dict(result.publication),
    }


def _decision_line(result: DecisionResult) -> str:
    if result.publication is None:
        return f"proposal {result.proposal}: {result.status} (the head stays)"
    return (
        f"proposal {result.proposal}: {result.status} ({result.decision}) "
        f"as version {result.publication.version}"
    )


COMMANDS = (proposals,)
