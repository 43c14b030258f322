"""`skillreg status`: what an operator needs to know, one section each.

Materialisation targets and what is pending on them (docs/materialize.md), the storage
figures of garbage collection (docs/gc.md), and each workspace's learning (docs/history.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import click
from rich.console import Console
from rich.table import Table

from registry.api.types import RevokedVersion, Status, TargetTrust
from registry.cli.common import CliState, json_option, make_scope, run_async, workspace_option
from registry.cli.gc import render_figures
from registry.cli.output import Output, shown


@click.command()
@workspace_option(
    "Only this workspace (default: every workspace).", required=False, must_exist=True
)
@click.option("--agent", help="Only this agent of the workspace.")
@click.option(
    "--revoked",
    is_flag=True,
    help="Only revoked versions: which targets still hold each, and how fast others converged.",
)
@json_option
@run_async
async def status(
    state: CliState, out: Output, *, workspace: str | None, agent: str | None, revoked: bool
) -> None:
    """Show storage figures, materialisation targets and each workspace's learning."""
    if workspace is not None:
        make_scope(workspace, agent or "personal")
    async with state.open() as reg:
        if revoked:
            found = await reg.revoked_status(workspace)
            out.emit(list(found), lambda c: render_revoked(found, c))
            return
        report = await reg.status(workspace, agent)
    out.emit(report, lambda c: _render_status(report, c))


def render_revoked(found: Sequence[RevokedVersion], console: Console) -> None:
    """Each revoked version: its targets holding it (with when last seen), the others' times."""
    if not found:
        console.print("no revoked versions")
        return
    for r in found:
        converged = [t for t in r.targets if t.state == "converged"]
        slowest = "" if r.slowest is None else f", slowest {r.slowest:.1f} s"
        console.print(
            f"[bold]{shown(f'{r.workspace}/{r.slug}@{r.version}')}[/] {r.kind}: "
            f"{shown(r.reason)} (revoked {r.revoked_at:%Y-%m-%d %H:%M:%S}Z by {shown(r.actor)}); "
            f"{r.holding} holding, {len(converged)} converged{slowest}"
        )
        table = Table(show_header=True, header_style="bold", box=None)
        for column in ("target", "host", "state", "holds", "last seen", "took"):
            table.add_column(column)
        for t in r.targets:
            if t.state == "clear" and not t.stale:
                continue
            table.add_row(
                shown(t.path),
                shown(t.host),
                t.state + (" (stale)" if t.stale else ""),
                "" if t.holds is None else f"v{t.holds}",
                "never" if t.last_seen is None else f"{t.last_seen:%Y-%m-%d %H:%M:%S}Z",
                "" if t.seconds is None else f"{t.seconds:.1f} s",
            )
        console.print(table)


def _render_status(report: Status, console: Console) -> None:
    console.rule("storage")
    render_figures(console, report.storage)
    console.rule("materialisation")
    _render_materialization(report, console)
    console.rule("learning")
    _render_learning(report, console)


def _render_learning(report: Status, console: Console) -> None:
    if not report.learning:
        console.print("no workspaces")
        return
    table = Table(show_header=True, header_style="bold", box=None)
    for column in ("workspace", "pending", "oldest", "decisions", "suppressed", "last learned"):
        table.add_column(column)
    for w in report.learning:
        decided = ", ".join(f"{k} {n}" for k, n in w.decisions.items() if n) or "-"
        last = w.last_learned
        table.add_row(
            w.workspace,
            str(w.pending_writes),
            "" if w.oldest_pending_at is None else f"{w.oldest_pending_at:%Y-%m-%d %H:%M}Z",
            decided,
            str(w.suppressions),
            "" if last is None else shown(f"{last.agent}/{last.slug}@{last.version}"),
        )
    console.print(table)
    for w in report.learning:
        if w.learning_paused:
            paused = shown(", ".join(f"{p.agent}/{p.slug}" for p in w.learning_paused))
            console.print(f"{w.workspace}: learning paused on {paused}")


def _render_materialization(report: Status, console: Console) -> None:
    section = report.materialization
    if not section.targets:
        console.print("no materialisation targets")
        return
    table = Table(show_header=True, header_style="bold", box=None, title="targets")
    for column in ("target", "host", "mode", "scope", "applied", "pending", "failed", "trust"):
        table.add_column(column)
    for t in section.targets:
        scope = t.workspace if t.agent == "personal" else f"{t.workspace}:{t.agent}"
        table.add_row(
            shown(t.path),
            shown(t.host),
            t.mode,
            scope,
            str(t.applied),
            str(t.pending),
            str(t.failed),
            trust_text(t.trust),
        )
    console.print(table)
    if not section.pending:
        console.print("nothing pending")
        return
    pending = Table(show_header=True, header_style="bold", box=None, title="pending")
    for column in ("target", "slug", "action", "desired", "applied", "last error"):
        pending.add_column(column)
    for p in section.pending:
        pending.add_row(
            shown(p.target),
            shown(p.slug),
            p.action,
            "" if p.desired_version is None else f"v{p.desired_version}",
            "" if p.applied_version is None else f"v{p.applied_version}",
            shown(p.error),
        )
    console.print(pending)


def trust_text(trust: TargetTrust | None) -> str:
    """A target's trust state in a few words (empty for a local target)."""
    if trust is None:
        return ""
    if trust.state == "stale":
        return f"stale since {trust.since:%Y-%m-%d %H:%M}Z" if trust.since else "stale"
    if trust.state == "refused":
        return shown(f"refused: {trust.detail or ''}", 200)
    return "verified" if trust.seq is None else f"verified (state {trust.seq})"


COMMANDS = (status,)
