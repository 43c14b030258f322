"""Materialisation commands: reconcile a target directory, write a lock file, show status.

`reconcile` exits 0 when every skill converged. When some failed it still prints the whole
report, then exits with the code of the failures (3 refused, 4 conflict, 5 not found) if
they all share one, else 1.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from registry.api.folders import replace_file
from registry.api.types import LockFile, ReconcileReport, SkillOutcome
from registry.cli.common import (
    FOLDER,
    CliState,
    agent_option,
    json_option,
    make_scope,
    run_async,
    workspace_option,
)
from registry.cli.exits import UNEXPECTED, exit_code
from registry.cli.output import Output, shown

_DRIFT_SHOWN = 20  # drift lines per skill in the human report (JSON has them all)
_STYLE = {
    "written": "green",
    "repaired": "yellow",
    "adopted": "cyan",
    "removed": "magenta",
    "failed": "bold red",
    "unchanged": "dim",
}


def target_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options `reconcile` and `sync` share: the scope, the target and how to fill it."""
    options = (
        workspace_option("The workspace whose skills to load."),
        agent_option,
        click.option(
            "--target",
            "-t",
            required=True,
            type=click.Path(file_okay=False, path_type=Path),
            help="The directory agents load skills from (created if missing).",
        ),
        click.option(
            "--mode",
            type=click.Choice(["link", "copy"]),
            help="link (default for a new target) or copy; fixed once the target is used.",
        ),
        click.option("--verify", is_flag=True, help="Rehash every file instead of trusting stat."),
        click.option(
            "--lock",
            "lock_path",
            type=click.Path(dir_okay=False, exists=True, path_type=Path),
            help="Materialise exactly the versions this lock file pins.",
        ),
        click.option(
            "--wait", is_flag=True, help="Wait for another reconciler instead of failing."
        ),
    )
    for option in reversed(options):
        command = option(command)
    return command


@click.command()
@target_options
@click.option("--adopt", is_flag=True, help="Publish on-disk edits as new versions.")
@click.option("--actor", default="reconciler", show_default=True, help="Who adopts edits.")
@click.option(
    "--create",
    is_flag=True,
    help="Bind TARGET to the scope even if it has no skills, no history and no target yet.",
)
@json_option
@run_async
async def reconcile(
    state: CliState,
    out: Output,
    *,
    workspace: str,
    agent: str,
    target: Path,
    mode: str | None,
    adopt: bool,
    verify: bool,
    lock_path: Path | None,
    wait: bool,
    actor: str,
    create: bool,
) -> None:
    """Make TARGET hold the skills of WORKSPACE in use, package-atomically; repair drift.

    A target is bound to its workspace and agent for good when first reconciled, so a
    scope with no skills, no history and no target (a misspelt name, most likely) is
    refused unless --create; `skillreg target forget TARGET` undoes a binding.
    """
    scope = make_scope(workspace, agent)
    if adopt and lock_path is not None:
        msg = "--adopt and --lock cannot be combined: a lock file pins versions"
        raise click.UsageError(msg)
    lock = None
    if lock_path is not None:
        lock = LockFile.loads(await asyncio.to_thread(lock_path.read_bytes))
    async with state.open() as reg:
        report = await reg.reconcile(
            scope,
            target,
            mode=mode,
            adopt=adopt,
            verify=verify,
            lock=lock,
            wait=wait,
            actor=actor,
            create=create,
        )
    out.emit(report_dict(report), lambda c: render_report(report, c))
    if not report.ok:
        raise click.exceptions.Exit(failure_code(report))


def failure_code(report: ReconcileReport) -> int:
    """The exit code of a report with failures: theirs if they share one, else 1."""
    errors = [*(o.error for o in report.outcomes if o.error is not None), *report.refused]
    codes = {exit_code(e) for e in errors}
    return codes.pop() if len(codes) == 1 else UNEXPECTED


def _outcome_dict(o: SkillOutcome) -> dict[str, Any]:
    return {
        "slug": o.slug,
        "action": o.action,
        "version": o.version,
        "manifest_hash": o.manifest_hash,
        "previous_hash": o.previous_hash,
        "drift": [{"path": d.path, "kind": d.kind, "detail": d.detail} for d in o.drift],
        "reason": o.reason,
        "error_code": o.error_code,
    }


def report_dict(report: ReconcileReport) -> dict[str, Any]:
    """The report as JSON data."""
    return {
        "target": report.target,
        "target_id": report.target_id,
        "mode": report.mode,
        "workspace": report.workspace,
        "agent": report.agent,
        "written": report.written,
        "unchanged": report.unchanged,
        "repaired": report.repaired,
        "adopted": report.adopted,
        "removed": report.removed,
        "failed": report.failed,
        "hashed": report.hashed,
        "fetched": report.fetched,
        "swept": report.swept,
        "skills": [_outcome_dict(o) for o in report.outcomes],
        "refused": [
            {"error_code": e.code, "reason": str(e), "details": e.details()} for e in report.refused
        ],
    }


def render_report(report: ReconcileReport, console: Console) -> None:
    """The report for people: one line per skill, its drift, then the counts."""
    console.print(
        f"[bold]{report.target}[/] ({report.mode} mode, workspace {report.workspace}, "
        f"agent {report.agent})"
    )
    for o in report.outcomes:
        style = _STYLE.get(o.action, "")
        version = f"v{o.version}" if o.version is not None else ""
        digest = o.manifest_hash[:12] if o.manifest_hash else ""
        line = f"  [{style}]{o.action:<9}[/] {o.slug:<32} {version:<5} {digest}"
        if o.reason:
            line += f"  {shown(o.reason)}"
        console.print(line)
        for d in o.drift[:_DRIFT_SHOWN]:
            detail = f" ({d.detail})" if d.detail else ""
            console.print(f"      {d.kind}: {shown(d.path)}{detail}")
        if len(o.drift) > _DRIFT_SHOWN:
            console.print(f"      ... and {len(o.drift) - _DRIFT_SHOWN} more")
    for error in report.refused:
        console.print(f"  [bold red]{'refused':<9}[/] {shown(str(error))}")
    counts = ", ".join(
        f"{len(report.slugs(a))} {a}"
        for a in ("written", "repaired", "adopted", "removed", "unchanged", "failed")
    )
    if report.refused:
        counts += f", {len(report.refused)} refused"
    console.print(f"{counts} ({report.hashed} hashed, {report.fetched} fetched)")


@click.command(name="lock")
@workspace_option("The workspace to pin.", must_exist=True)
@agent_option
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the lock file here (default: print it).",
)
@json_option
@run_async
async def lock(
    state: CliState, out: Output, *, workspace: str, agent: str, out_path: Path | None
) -> None:
    """Pin the head version and manifest hash of every skill of WORKSPACE in use."""
    scope = make_scope(workspace, agent)
    async with state.open() as reg:
        pinned = await reg.lock_file(scope)
    text = pinned.dumps()
    if out_path is None:
        click.echo(text, nl=False)
        return
    await asyncio.to_thread(replace_file, out_path, text.encode())
    out.emit(
        {"out": str(out_path), "skills": len(pinned.skills), "lock": pinned},
        lambda c: c.print(f"wrote {out_path} ({len(pinned.skills)} skills of {scope})"),
    )


@click.group(name="target")
def target() -> None:
    """Materialisation targets: directories `reconcile` keeps."""


@target.command(name="forget")
@click.argument("directory", type=FOLDER)
@click.option("--wait", is_flag=True, help="Wait for a reconciler at work instead of failing.")
@json_option
@run_async
async def forget(state: CliState, out: Output, *, directory: Path, wait: bool) -> None:
    """Unbind DIRECTORY from its scope: remove the skills reconcile put there and its records.

    Files the reconciler did not make stay. Reconcile DIRECTORY again (with any scope) to
    use it anew.
    """
    async with state.open() as reg:
        report = await reg.forget_target(directory, wait=wait)
    out.emit(
        report,
        lambda c: c.print(
            f"forgot {report.target} (workspace {report.workspace}, agent {report.agent}): "
            f"{len(report.removed)} skills removed, {report.records} records deleted"
        ),
    )


COMMANDS = (reconcile, lock, target)
