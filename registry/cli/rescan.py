"""Rescanning when the content rules change, and the owner's content reviews.

skillreg rescan [-w W] [--wait]                  check what is in use with the current rules
skillreg reviews list -w W                       the open content reviews of a workspace
skillreg reviews approve ID -w W                 accept a review's findings; use resumes
"""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.table import Table

from registry.api.types import JobRow, ReviewRow
from registry.cli.common import ROW_ID, CliState, DecimalRange, json_option, run_async
from registry.cli.history import actor_option
from registry.cli.output import Output, shown
from registry.domain.model import check_scope_name
from registry.errors import InvalidName


def _workspace(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return check_scope_name("workspace", value)
    except InvalidName as exc:
        raise click.BadParameter(str(exc)) from None


def _job_data(job: JobRow) -> dict[str, Any]:
    return {f: getattr(job, f) for f in JobRow.__slots__}


def rescan_line(job: JobRow) -> str:
    """One line on a rescan job: where it stands, what it found."""
    figures = job.result if job.status == "succeeded" else job.progress
    where = job.payload.get("workspace") or "every workspace"
    if not figures:
        return f"job {job.id} rescan of {where}: {job.status}"
    return (
        f"job {job.id} rescan of {where}: {job.status}, {figures['done']} of "
        f"{figures['total']} packages checked with the current rules; "
        f"{figures['blocked']} heads blocked, {figures['opened']} reviews opened, "
        f"{figures['paused']} skills stopped"
    )


@click.command()
@click.option("--workspace", "-w", help="Only this workspace (default: every workspace).")
@click.option("--wait", is_flag=True, help="Run the rescan here, to the end, and report it.")
@actor_option
@json_option
@run_async
async def rescan(
    state: CliState, out: Output, *, workspace: str | None, wait: bool, actor: str
) -> None:
    """Check every head and installed listing version with the current content rules.

    Queues a rescan job (a worker runs it: `skillreg jobs run`, or `serve --jobs`);
    with --wait it runs here. Progress: `skillreg jobs list`. A blocking finding stops
    the skill's use and opens a review for its owner (`skillreg reviews list`).
    """
    workspace = _workspace(workspace)
    async with state.open() as reg:
        enqueued = await reg.rescan.start(workspace=workspace, actor=actor)
        job = enqueued.job
        if wait:
            outcome = await reg.marketplace.worker().run_job(job.id)
            if outcome.error is not None:
                raise outcome.error
            job = outcome.job
        ruleset = reg.rescan.ruleset
    data = {"job": _job_data(job), "ruleset": ruleset}
    if wait:
        out.emit(data, lambda c: c.print(rescan_line(job), soft_wrap=True))
        return
    out.emit(
        data,
        lambda c: c.print(
            f"queued job {job.id}: a rescan of {workspace or 'every workspace'} with rule set "
            f"{ruleset}; a worker runs it (skillreg jobs run), progress: skillreg jobs list",
            soft_wrap=True,
        ),
    )


@click.group()
def reviews() -> None:
    """Content reviews: blocking findings a rescan found in heads, for the owner to decide."""


def _render_reviews(items: list[ReviewRow], console: Console) -> None:
    if not items:
        console.print("no open reviews")
        return
    table = Table(show_header=True, header_style="bold", box=None)
    for column in ("id", "skill", "version", "findings", "use stopped", "opened"):
        table.add_column(column)
    for review in items:
        findings = ", ".join(
            f"{shown(f['path'])}:{f['ordinal']} ({f['pattern_class']})" for f in review.findings
        )
        table.add_row(
            str(review.id),
            f"{review.agent}/{review.slug}",
            str(review.version),
            findings,
            "yes" if review.paused_use else "no",
            f"{review.opened_at:%Y-%m-%d %H:%M:%S}",
        )
    console.print(table)


@reviews.command(name="list")
@click.option("--workspace", "-w", required=True, help="The workspace.")
@click.option("--limit", default=50, show_default=True, type=DecimalRange(1, 200))
@click.option("--before", type=ROW_ID, help="Continue after this id (from the previous page).")
@json_option
@run_async
async def list_reviews(
    state: CliState, out: Output, *, workspace: str, limit: int, before: int | None
) -> None:
    """List the open content reviews of a workspace, newest first."""
    _workspace(workspace)
    async with state.open() as reg:
        page = await reg.rescan.reviews(workspace, limit=limit, before=before)
    out.emit(page, lambda c: _render_reviews(page.items, c))


@reviews.command(name="approve")
@click.argument("review_id", type=ROW_ID)
@click.option("--workspace", "-w", required=True, help="The workspace.")
@actor_option
@json_option
@run_async
async def approve_review(
    state: CliState, out: Output, *, review_id: int, workspace: str, actor: str
) -> None:
    """Accept review REVIEW_ID's findings for its package; the use the rescan stopped resumes."""
    _workspace(workspace)
    async with state.open() as reg:
        result = await reg.rescan.approve(workspace, review_id, actor=actor)
    review = result.review
    resumed = "; use resumed" if result.resumed else ""
    out.emit(
        result,
        lambda c: c.print(
            f"approved review {review.id}: {review.workspace}/{review.slug} version "
            f"{review.version}{resumed}",
            soft_wrap=True,
        ),
    )


COMMANDS = (rescan, reviews)
