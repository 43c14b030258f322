"""`skillreg yank` and `unyank`: revoke a version, or take the revocation back.

REF is `SLUG@N` with `-w/--workspace`, or `WORKSPACE/SLUG@N`. A catalog listing's version
is yanked in the catalog workspace (`-w` the catalog's, or `CATALOG/LISTING@N`); its
installed copies are moved off it by update jobs (docs/revocation.md).
"""

from __future__ import annotations

import click
from rich.console import Console

from registry.api.types import Revocation, YankReport
from registry.cli.common import (
    CliState,
    agent_option,
    json_option,
    make_scope,
    parse_ref,
    run_async,
    workspace_option,
)
from registry.cli.history import actor_option
from registry.cli.output import Output, shown

_WORKSPACE = "The workspace (else REF is WORKSPACE/SLUG@N)."


def parse_version_ref(ref: str, workspace: str | None) -> tuple[str, str, int]:
    """`SLUG@N` with a workspace, or `WORKSPACE/SLUG@N` -> (workspace, slug, N)."""
    named = ref if workspace is None or "/" in ref else f"{workspace}/{ref}"
    found, slug, version = parse_ref(named)
    if version is None:
        msg = f"{ref!r}: name the version as SLUG@N"
        raise click.BadParameter(msg)
    if workspace is not None and found != workspace:
        msg = f"{ref!r} names workspace {found!r}, not {workspace!r} (-w)"
        raise click.BadParameter(msg)
    return found, slug, version


def _render_yank(report: YankReport, console: Console) -> None:
    r = report.revocation
    where = shown(f"{r.workspace}/{r.slug}@{r.version}")
    if report.already:
        console.print(f"{where} was already revoked ({r.kind}): {shown(r.reason)}")
        return
    console.print(f"{where} revoked ({r.kind}): {shown(r.reason)}")
    if report.moved_to is not None:
        console.print(
            f"  head moved to version {report.moved_to} (the package of {report.restored_from})"
        )
    if report.use_stopped:
        console.print("  no version is left to use: the skill's use stopped")
    if report.copies_updated or report.copies_stopped:
        console.print(
            f"  installed copies: {report.copies_updated} update jobs queued, "
            f"{report.copies_stopped} stopped"
        )


@click.command()
@click.argument("ref")
@workspace_option(_WORKSPACE, required=False, must_exist=True)
@click.option(
    "--kind",
    type=click.Choice(["security", "broken", "policy"]),
    default="broken",
    show_default=True,
    help="Why, in one word.",
)
@click.option("--reason", required=True, help="Why the version is revoked (kept and signed).")
@agent_option
@actor_option
@json_option
@run_async
async def yank(
    state: CliState,
    out: Output,
    *,
    ref: str,
    workspace: str | None,
    kind: str,
    reason: str,
    agent: str,
    actor: str,
) -> None:
    """Revoke REF (SLUG@N with -w): never served for use again; a revoked head moves back."""
    found, slug, version = parse_version_ref(ref, workspace)
    async with state.open() as reg:
        report = await reg.yank(
            make_scope(found, agent), slug, version, kind=kind, reason=reason, actor=actor
        )
    out.emit(report, lambda c: _render_yank(report, c))


@click.command()
@click.argument("ref")
@workspace_option(_WORKSPACE, required=False, must_exist=True)
@agent_option
@actor_option
@json_option
@run_async
async def unyank(
    state: CliState, out: Output, *, ref: str, workspace: str | None, agent: str, actor: str
) -> None:
    """Take back the revocation of REF (SLUG@N with -w).

    The head does not move back by itself: restore the version if it should be the head.
    """
    found, slug, version = parse_version_ref(ref, workspace)
    async with state.open() as reg:
        result: Revocation = await reg.unyank(make_scope(found, agent), slug, version, actor=actor)
    where = shown(f"{result.workspace}/{result.slug}@{result.version}")
    out.emit(result, lambda c: c.print(f"{where}: revocation taken back"))


COMMANDS = (yank, unyank)
