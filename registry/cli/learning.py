"""The owner's side of automated learning: decisions, pending writes, suppressions, loads.

skillreg decisions list W [--agent A] [--origin O] [--kind K]
skillreg decisions decide W [--apply ID]... [--keep ID]... [--alternative ID=DIR]...
skillreg pending list W [--all]      skillreg pending drop W ID      skillreg pending apply [W]
skillreg suppressions list W [--all] skillreg suppressions lift W ID
skillreg load W/SLUG@N --conversation C         skillreg loads W CONVERSATION
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from registry.api.folders import read_folder
from registry.api.types import (
    PROPOSAL_KINDS,
    DecisionOutcome,
    DecisionRequest,
    PendingWriteInfo,
    ProposalPage,
    SuppressionInfo,
)
from registry.cli.common import (
    FOLDER,
    ROW_ID,
    CliState,
    DecimalRange,
    agent_option,
    json_option,
    make_scope,
    parse_ref,
    row_id,
    run_async,
    workspace_option,
)
from registry.cli.history import actor_option, publication_dict
from registry.cli.output import Output, human_size, shown

# ---------------------------------------------------------------- decisions


@click.group()
def decisions() -> None:
    """One list of open decisions across a workspace's agents; decide several at once."""


def _render_decisions(page: ProposalPage, console: Console) -> None:
    if not page.items:
        console.print("no open decisions")
        return
    table = Table(show_header=True, header_style="bold", box=None)
    for column in ("id", "agent", "skill", "kind", "status", "base", "head", "by", "size"):
        table.add_column(column)
    for p in page.items:
        table.add_row(
            str(p.id),
            p.agent,
            p.slug,
            p.kind,
            p.status,
            str(p.base_version),
            str(p.head),
            shown(f"{p.origin}/{p.actor}"),
            human_size(p.total_size),
        )
    console.print(table)
    if page.next_before:
        console.print(f"more: --before {page.next_before}")


@decisions.command(name="list")
@workspace_option(positional_alias=True, must_exist=True)
@click.option("--agent", help="Only this agent's skills.")
@click.option("--origin", help="Only proposals of this origin (learning, marketplace_update, ...).")
@click.option("--kind", type=click.Choice(PROPOSAL_KINDS), help="Only this kind of decision.")
@click.option("--limit", default=50, show_default=True, type=DecimalRange(1, 200))
@click.option("--before", type=ROW_ID, help="Continue after this id (from the previous page).")
@json_option
@run_async
async def list_decisions(
    state: CliState,
    out: Output,
    *,
    workspace: str,
    agent: str | None,
    origin: str | None,
    kind: str | None,
    limit: int,
    before: int | None,
) -> None:
    """List the open decisions of WORKSPACE, every agent's, newest first."""
    async with state.open() as reg:
        page = await reg.learning.decisions(
            workspace, agent=agent, origin=origin, kind=kind, limit=limit, before=before
        )
    out.emit(page, lambda c: _render_decisions(page, c))


def _alternative(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> list[tuple[int, Path]]:
    """`ID=DIR` values: a proposal id and a folder that exists (as `FOLDER` checks)."""
    alternatives = []
    for value in values:
        raw, sep, directory = value.partition("=")
        proposal = row_id(raw)
        if not sep or proposal is None or not directory:
            msg = f"{value!r}: expected ID=DIR (the edited package of proposal ID)"
            raise click.BadParameter(msg, ctx, param)
        alternatives.append((proposal, FOLDER.convert(directory, param, ctx)))
    return alternatives


def _outcome(outcome: DecisionOutcome) -> dict[str, Any]:
    result = outcome.result
    return {
        "proposal": outcome.proposal,
        "decision": outcome.decision,
        "ok": outcome.ok,
        "status": None if result is None else result.status,
        "publication": None
        if result is None or result.publication is None
        else publication_dict(result.publication),
        "error": outcome.error,
    }


def _outcome_line(outcome: DecisionOutcome) -> str:
    if not outcome.ok:
        error = outcome.error or {}
        return f"proposal {outcome.proposal}: {outcome.decision} refused: {error.get('message')}"
    result = outcome.result
    assert result is not None
    if result.publication is None:
        return f"proposal {outcome.proposal}: {result.status}"
    return f"proposal {outcome.proposal}: {result.status} as version {result.publication.version}"


@decisions.command(name="decide")
@workspace_option(positional_alias=True)
@click.option(
    "--apply", "apply_", type=ROW_ID, multiple=True, help="Apply proposal ID (repeatable)."
)
@click.option("--keep", type=ROW_ID, multiple=True, help="Keep the current version over ID.")
@click.option(
    "--alternative",
    multiple=True,
    metavar="ID=DIR",
    callback=_alternative,
    help="Publish the edited package in DIR instead of proposal ID.",
)
@actor_option
@json_option
@run_async
async def decide_many(
    state: CliState,
    out: Output,
    *,
    workspace: str,
    apply_: tuple[int, ...],
    keep: tuple[int, ...],
    alternative: list[tuple[int, Path]],
    actor: str,
) -> None:
    """Decide several proposals of WORKSPACE at once; each succeeds or fails alone.

    Exits 4 if any decision was refused (the others are taken all the same).
    """
    requests = [DecisionRequest(p, "apply") for p in apply_]
    requests += [DecisionRequest(p, "keep_current") for p in keep]
    for proposal, directory in alternative:
        files = await asyncio.to_thread(read_folder, directory, limits=state.settings.limits())
        requests.append(DecisionRequest(proposal, "alternative", files=files))
    if not requests:
        msg = "name at least one decision (--apply, --keep or --alternative)"
        raise click.UsageError(msg)
    async with state.open(write=f"skillreg decisions list -w {workspace}") as reg:
        outcomes = await reg.learning.decide_many(workspace, requests, actor=actor)

    def render(console: Console) -> None:
        for outcome in outcomes:
            console.print(shown(_outcome_line(outcome)))

    out.emit({"outcomes": [_outcome(o) for o in outcomes]}, render)
    if not all(o.ok for o in outcomes):
        raise click.exceptions.Exit(4)


# ---------------------------------------------------------------- pending writes


@click.group()
def pending() -> None:
    """Learning writes waiting for a saved slot: list, apply, drop."""


def _render_pending(items: list[PendingWriteInfo], console: Console) -> None:
    if not items:
        console.print("no pending writes")
        return
    table = Table(show_header=True, header_style="bold", box=None)
    for column in ("id", "agent", "skill", "status", "since", "by", "size", "outcome"):
        table.add_column(column)
    for w in items:
        table.add_row(
            str(w.id),
            w.agent,
            w.slug,
            w.status,
            f"{w.created_at:%Y-%m-%d %H:%M:%S}Z",
            shown(w.actor),
            human_size(w.total_size),
            shown(str(w.outcome or "")),
        )
    console.print(table)


@pending.command(name="list")
@workspace_option(positional_alias=True, must_exist=True)
@click.option("--agent", help="Only this agent's.")
@click.option("--all", "everything", is_flag=True, help="Include applied, dropped and failed ones.")
@json_option
@run_async
async def list_pending(
    state: CliState, out: Output, *, workspace: str, agent: str | None, everything: bool
) -> None:
    """List the pending writes of WORKSPACE, oldest first (waiting ones unless --all)."""
    async with state.open() as reg:
        items = await reg.learning.pending_writes(
            workspace, agent=agent, waiting_only=not everything
        )
    out.emit({"items": items}, lambda c: _render_pending(items, c))


@pending.command(name="apply")
@workspace_option(
    "Only this workspace (default: every workspace).", required=False, positional_alias=True
)
@json_option
@run_async
async def apply_pending(state: CliState, out: Output, *, workspace: str | None) -> None:
    """Apply waiting writes (of WORKSPACE, or all) in order while there is room."""
    async with state.open(
        write="skillreg pending list --all" + (f" -w {workspace}" if workspace else "")
    ) as reg:
        items = await reg.learning.apply_pending_writes(workspace)
    out.emit({"items": items}, lambda c: _render_pending(items, c))


@pending.command(name="drop")
@workspace_option(positional_alias=True)
@click.argument("pending_id", type=ROW_ID)
@actor_option
@json_option
@run_async
async def drop_pending(
    state: CliState, out: Output, *, workspace: str, pending_id: int, actor: str
) -> None:
    """Drop waiting write PENDING_ID of WORKSPACE: it is never applied."""
    async with state.open(write=f"skillreg pending list -w {workspace} --all") as reg:
        item = await reg.learning.drop_pending_write(workspace, pending_id, actor=actor)
    out.emit(item, lambda c: c.print(f"pending write {item.id}: {item.status}"))


# ---------------------------------------------------------------- suppressions


@click.group()
def suppressions() -> None:
    """Behaviours the owner undid (restores) or removed (deletes): list, lift."""


def _render_suppressions(items: list[SuppressionInfo], console: Console) -> None:
    if not items:
        console.print("no suppressions")
        return
    table = Table(show_header=True, header_style="bold", box=None)
    for column in ("id", "agent", "skill", "cause", "undid", "files", "status", "by"):
        table.add_column(column)
    for s in items:
        table.add_row(
            str(s.id),
            s.agent,
            s.slug,
            s.cause,
            f"v{s.undone_version}",
            shown(", ".join(s.paths + [f"-{p}" for p in s.removed])),
            s.status,
            shown(s.actor),
        )
    console.print(table)


@suppressions.command(name="list")
@workspace_option(positional_alias=True, must_exist=True)
@click.option("--agent", help="Only this agent's.")
@click.option("--all", "everything", is_flag=True, help="Include lifted ones.")
@json_option
@run_async
async def list_suppressions(
    state: CliState, out: Output, *, workspace: str, agent: str | None, everything: bool
) -> None:
    """List the suppressions of WORKSPACE, newest first (active ones unless --all)."""
    async with state.open() as reg:
        items = await reg.learning.suppressions(workspace, agent=agent, active_only=not everything)
    out.emit({"items": items}, lambda c: _render_suppressions(items, c))


@suppressions.command(name="lift")
@workspace_option(positional_alias=True)
@click.argument("suppression_id", type=ROW_ID)
@actor_option
@json_option
@run_async
async def lift_suppression(
    state: CliState, out: Output, *, workspace: str, suppression_id: int, actor: str
) -> None:
    """Lift suppression SUPPRESSION_ID: learning may bring that behaviour back directly."""
    async with state.open(write=f"skillreg suppressions list -w {workspace} --all") as reg:
        item = await reg.learning.lift_suppression(workspace, suppression_id, actor=actor)
    out.emit(item, lambda c: c.print(f"suppression {item.id}: {item.status}"))


# ---------------------------------------------------------------- loads


@click.command(name="load")
@click.argument("ref")
@click.option("--conversation", required=True, help="The conversation the runtime loaded it for.")
@agent_option
@json_option
@run_async
async def record_load(
    state: CliState, out: Output, *, ref: str, conversation: str, agent: str
) -> None:
    """Record that a runtime loaded REF (WORKSPACE/SLUG@VERSION) for a conversation."""
    workspace, slug, version = parse_ref(ref)
    if version is None:
        msg = f"{ref!r}: name the exact version loaded (WORKSPACE/SLUG@VERSION)"
        raise click.BadParameter(msg)
    async with state.open() as reg:
        load = await reg.record_load(make_scope(workspace, agent), slug, version, conversation)
    out.emit(
        load,
        lambda c: c.print(
            f"{slug}@{load.version} loaded for {shown(conversation)}"
            + ("" if load.created else " (already recorded)")
        ),
    )


@click.command(name="loads")
@workspace_option(positional_alias=True, must_exist=True)
@click.argument("conversation")
@json_option
@run_async
async def list_loads(state: CliState, out: Output, *, workspace: str, conversation: str) -> None:
    """List the versions loaded for CONVERSATION in WORKSPACE, in order."""
    async with state.open() as reg:
        items = await reg.loads(workspace, conversation)

    def render(console: Console) -> None:
        for i in items:
            console.print(f"{i.agent}/{i.slug}@{i.version} {i.loaded_at:%H:%M:%S}Z")
        if not items:
            console.print("no loads")

    out.emit({"items": items}, render)


COMMANDS = (decisions, pending, suppressions, record_load, list_loads)
