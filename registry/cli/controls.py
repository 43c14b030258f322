"""Owner control commands.

state, pause, resume, stop-using, resume-use, auto-improve, delete, exclude-source.
"""

from __future__ import annotations

import sys

import click
from rich.console import Console

from registry.api.types import ExclusionReport, SkillStatus
from registry.cli.common import (
    VERSION,
    CliState,
    agent_option,
    json_option,
    make_scope,
    nonblank,
    run_async,
    workspace_option,
)
from registry.cli.history import actor_option, parse_skill
from registry.cli.output import Output, shown


def render_status(status: SkillStatus, console: Console) -> None:
    console.print(
        f"[bold]{status.scope.workspace}/{status.slug}[/] head {status.head}: "
        f"[bold]{status.state}[/]"
        + (f" ({', '.join(status.states)})" if len(status.states) > 1 else "")
    )
    console.print(
        f"automatic improvements {'on' if status.auto_improve else 'off'}; "
        f"learning {'paused' if status.learning_paused else 'active'}; "
        f"use {'paused' if status.use_paused else 'active'}"
        + (f"; reason: {shown(status.pause_reason)}" if status.pause_reason else "")
    )
    if status.proposal is not None:
        console.print(f"proposal {status.proposal} is {status.proposal_status}")
    if status.blocked_by:
        where = status.blocked_by
        console.print(
            f"blocked: finding #{where['ordinal']} in {shown(str(where['path']))} "
            f"looks like a {where['pattern_class']}"
        )
    if status.unavailable_because:
        console.print(f"head unavailable: source {shown(status.unavailable_because)} excluded")


@click.command(name="state")
@click.argument("ref")
@agent_option
@json_option
@run_async
async def skill_state(state: CliState, out: Output, *, ref: str, agent: str) -> None:
    """Show the state of REF (WORKSPACE/SLUG): controls, pending proposal, content check."""
    workspace, slug = parse_skill(ref)
    async with state.open() as reg:
        result = await reg.skill_status(make_scope(workspace, agent), slug)
    out.emit(result, lambda c: render_status(result, c))


@click.command()
@click.argument("ref")
@agent_option
@actor_option
@click.option("--reason", default="", help="Why (kept while paused).")
@json_option
@run_async
async def pause(
    state: CliState, out: Output, *, ref: str, agent: str, actor: str, reason: str
) -> None:
    """Pause learning of REF: automated writes become proposals."""
    workspace, slug = parse_skill(ref)
    async with state.open(write=f"skillreg state {ref}") as reg:
        result = await reg.pause_learning(
            make_scope(workspace, agent), slug, actor=actor, reason=reason
        )
    out.emit(result, lambda c: render_status(result, c))


@click.command(name="stop-using")
@click.argument("ref")
@agent_option
@actor_option
@click.option("--reason", default="", help="Why (kept while paused).")
@json_option
@run_async
async def stop_using(
    state: CliState, out: Output, *, ref: str, agent: str, actor: str, reason: str
) -> None:
    """Stop using REF: runtimes no longer load it; its history is kept."""
    workspace, slug = parse_skill(ref)
    async with state.open(write=f"skillreg state {ref}") as reg:
        result = await reg.stop_using(
            make_scope(workspace, agent), slug, actor=actor, reason=reason
        )
    out.emit(result, lambda c: render_status(result, c))


def _simple(name: str, doc: str, method: str) -> click.Command:
    @click.argument("ref")
    @agent_option
    @actor_option
    @json_option
    @run_async
    async def command(state: CliState, out: Output, *, ref: str, agent: str, actor: str) -> None:
        workspace, slug = parse_skill(ref)
        async with state.open(write=f"skillreg state {ref}") as reg:
            result: SkillStatus = await getattr(reg, method)(
                make_scope(workspace, agent), slug, actor=actor
            )
        out.emit(result, lambda c: render_status(result, c))

    command.__doc__ = doc
    return click.command(name=name)(command)


resume = _simple("resume", "Resume learning of REF (WORKSPACE/SLUG).", "resume_learning")
resume_use = _simple(
    "resume-use", "Resume use of REF (refused while its head is blocked).", "resume_use"
)


@click.command()
@click.argument("ref")
@click.option(
    "--expect-head",
    "expect",
    type=VERSION,
    help="Delete only if the head is still this version (else exit 4, nothing changed).",
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (scripts).")
@agent_option
@actor_option
@json_option
@run_async
async def delete(
    state: CliState,
    out: Output,
    *,
    ref: str,
    expect: int | None,
    yes: bool,
    agent: str,
    actor: str,
) -> None:
    """Delete REF: its versions are kept (archived) and the slug is free.

    Asks for confirmation on a terminal; --yes skips the question, and without a
    terminal (a script, a pipe) --yes is required.
    """
    workspace, slug = parse_skill(ref)
    if not yes:
        if not sys.stdin.isatty():
            msg = "stdin is not a terminal, so nothing can confirm the delete: pass --yes"
            raise click.UsageError(msg)
        question = f"Delete {ref}" + (f" (head version {expect})" if expect else "") + "?"
        if not click.confirm(question, default=False, err=True):
            out.emit({"deleted": False}, lambda c: c.print("not deleted"))
            return
    async with state.open(write=f"skillreg list -w {workspace}") as reg:
        result: SkillStatus = await reg.delete(
            make_scope(workspace, agent), slug, actor=actor, expected_head=expect
        )
    out.emit(result, lambda c: render_status(result, c))


@click.command(name="auto-improve")
@click.argument("ref")
@click.argument("setting", type=click.Choice(["on", "off"]))
@agent_option
@actor_option
@json_option
@run_async
async def auto_improve(
    state: CliState, out: Output, *, ref: str, setting: str, agent: str, actor: str
) -> None:
    """Turn automatic improvements of REF on or off."""
    workspace, slug = parse_skill(ref)
    async with state.open(write=f"skillreg state {ref}") as reg:
        result = await reg.set_auto_improve(
            make_scope(workspace, agent), slug, enabled=setting == "on", actor=actor
        )
    out.emit(result, lambda c: render_status(result, c))


def _render_exclusion(report: ExclusionReport, console: Console) -> None:
    verb = "excluded" if report.newly_excluded else "was already excluded"
    console.print(f"source {shown(report.source)} {verb} from {report.workspace}")
    for repair in report.repairs:
        if repair.outcome == "rolled_back":
            console.print(
                f"  {repair.slug}: head {repair.previous_head} rolled back to version "
                f"{repair.restored_from} as version {repair.version}"
            )
        else:
            console.print(f"  {repair.slug}: {repair.outcome.replace('_', ' ')}")


@click.command(name="exclude-source")
@workspace_option(positional_alias=True)
@click.argument("source", callback=nonblank)
@actor_option
@click.option("--reason", default="", help="Why the source is excluded.")
@json_option
@run_async
async def exclude_source(
    state: CliState, out: Output, *, workspace: str, source: str, actor: str, reason: str
) -> None:
    """Exclude SOURCE from WORKSPACE and roll back every head that depends on it."""
    async with state.open(write=f"skillreg list -w {workspace}") as reg:
        report = await reg.exclude_source(
            make_scope(workspace, "personal"), source, actor=actor, reason=reason
        )
    out.emit(report, lambda c: _render_exclusion(report, c))


COMMANDS = (
    skill_state,
    pause,
    resume,
    stop_using,
    resume_use,
    auto_improve,
    delete,
    exclude_source,
)
