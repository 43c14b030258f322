"""Garbage collection and integrity commands: `gc`, `gc stats`, `fsck`."""

from __future__ import annotations

import re
from typing import Final

import click
from rich.console import Console

from registry.api.types import FsckReport, GcFigures, GcReport
from registry.cli.common import CliState, json_option, run_async
from registry.cli.exits import exit_code
from registry.cli.output import Output, count, human_size, to_jsonable
from registry.errors import Inconsistency

_UNITS: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PART: Final = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
# fsck found an inconsistency: the exit code of `Inconsistency` in the one table.
INCONSISTENT: Final = exit_code(Inconsistency("fsck"))


def parse_duration(text: str) -> float:
    """Seconds in `0s`, `90m`, `1h30m`, `1.5h`, `2d`, `1w`, or a plain number of seconds."""
    value = text.strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        return float(value)
    parts = _PART.findall(value)
    if not value or "".join(n + u for n, u in parts) != value:
        msg = f"{text!r}: expected a duration such as 0s, 90m, 1h30m or 2d"
        raise click.BadParameter(msg)
    return sum(float(number) * _UNITS[unit] for number, unit in parts)


def _duration(_ctx: click.Context, _param: click.Parameter, value: str | None) -> float | None:
    return None if value is None else parse_duration(value)


# ---------------------------------------------------------------- gc


@click.group(invoke_without_command=True)
@click.option(
    "--grace",
    callback=_duration,
    metavar="DURATION",
    help="Keep orphans touched more recently than this (default SKILLREG_GC_GRACE, 1h).",
)
@click.option("--dry-run", is_flag=True, help="Report what would be reclaimed; change nothing.")
@json_option
@click.pass_context
def gc(
    ctx: click.Context,
    grace: float | None,
    dry_run: bool,  # noqa: FBT001 - a click flag
    as_json: bool,  # noqa: FBT001 - a click flag
) -> None:
    """Reclaim orphaned blobs (safe while writers run); `gc stats` shows the figures."""
    if ctx.invoked_subcommand is None:
        _collect(grace=grace, dry_run=dry_run, as_json=as_json)


@run_async
async def _collect(state: CliState, out: Output, *, grace: float | None, dry_run: bool) -> None:
    async with state.open(write="skillreg gc stats") as reg:
        report = await reg.gc.collect(grace=grace, dry_run=dry_run)
        figures = await reg.gc.figures()
    out.emit(
        {**to_jsonable(report), "figures": to_jsonable(figures)},
        lambda c: _render_report(c, report),
    )


def _render_report(console: Console, report: GcReport) -> None:
    verb = "would reclaim" if report.dry_run else "reclaimed"
    head = "gc (dry run)" if report.dry_run else "gc"
    untracked = (
        f", {report.untracked_reclaimed} of them without a row"
        if report.untracked_reclaimed
        else ""
    )
    console.print(
        f"{head}: {verb} {count(report.blobs_reclaimed, 'blob')} "
        f"({human_size(report.bytes_reclaimed)})"
        f"{untracked}; grace {report.grace_seconds:g}s"
    )
    claims = "would delete" if report.dry_run else "deleted"
    console.print(f"  expired claims {claims}: {report.claims_expired}")
    if report.skipped:
        console.print(f"  kept because a writer took them back meanwhile: {report.skipped}")
    console.print(
        f"  store listed: {report.store_objects} objects, {human_size(report.store_bytes)}"
    )
    if report.retention is not None:
        r = report.retention
        pruned = "would prune" if report.dry_run else "pruned"
        console.print(
            f"  retention {pruned} {r.versions_pruned} versions and {r.proposals_pruned} "
            f"closed proposals of {r.skills_pruned} skills ({r.manifests_deleted} manifests)"
        )


@gc.command()
@json_option
@run_async
async def stats(state: CliState, out: Output) -> None:
    """Bytes stored, referenced and orphaned; what GC reclaimed and when it last ran."""
    async with state.open() as reg:
        figures = await reg.gc.figures()
    out.emit(figures, lambda c: render_figures(c, figures))


def render_figures(console: Console, f: GcFigures) -> None:
    """The figures for people (also used by `skillreg status`)."""
    console.print(f"blobs stored      {f.blobs_stored} ({human_size(f.bytes_stored)})")
    console.print(f"referenced        {f.blobs_referenced} ({human_size(f.bytes_referenced)})")
    console.print(
        f"orphaned          {f.orphan_blobs} ({human_size(f.orphan_bytes)}), "
        f"{f.reclaimable_blobs} ({human_size(f.reclaimable_bytes)}) reclaimable now"
    )
    console.print(f"claims in flight  {f.claims}")
    if f.last_gc is None:
        console.print("last GC           never")
        return
    last = f.last_gc
    console.print(
        f"last GC           {last.finished_at:%Y-%m-%d %H:%M:%S}Z, reclaimed "
        f"{count(last.blobs_reclaimed, 'blob')} ({human_size(last.bytes_reclaimed)})"
    )
    console.print(
        f"all GC runs       {f.gc_runs}, reclaimed {count(f.blobs_reclaimed_total, 'blob')} "
        f"({human_size(f.bytes_reclaimed_total)})"
    )


# ---------------------------------------------------------------- fsck


@click.command()
@click.option(
    "--verify-content", is_flag=True, help="Read every referenced blob and check its hash."
)
@click.option("--limit", default=1000, show_default=True, help="Problems and orphans listed.")
@json_option
@run_async
async def fsck(state: CliState, out: Output, *, verify_content: bool, limit: int) -> None:
    """Check the registry end to end; exit 1 on any inconsistency. Lists orphans."""
    async with state.open() as reg:
        report = await reg.gc.fsck(verify_content=verify_content, limit=limit)
    out.emit(
        {**to_jsonable(report), "clean": report.clean},
        lambda c: _render_fsck(c, report),
    )
    if not report.clean:
        raise click.exceptions.Exit(INCONSISTENT)


def _render_fsck(console: Console, report: FsckReport) -> None:
    how = "contents verified" if report.verify_content else "existence and size"
    console.print(
        f"fsck: {count(report.skills_checked, 'skill')}, "
        f"{count(report.versions_checked, 'version')}, "
        f"{count(report.manifests_checked, 'manifest')}, "
        f"{count(report.blobs_checked, 'referenced blob')} "
        f"({human_size(report.bytes_checked)}, {how}); store holds "
        f"{count(report.store_objects, 'object')} ({human_size(report.store_bytes)})"
    )
    console.print(f"orphans: {report.orphan_count} ({human_size(report.orphan_bytes)})")
    for orphan in report.orphans:
        where = "stored" if orphan.stored else "no object"
        claim = ", claimed" if orphan.claimed else ""
        console.print(
            f"  {orphan.digest}  {human_size(orphan.bytes):>9}  {orphan.status}, {where}{claim}",
            soft_wrap=True,
        )
    _more(console, report.orphan_count, len(report.orphans))
    if report.clean:
        console.print("problems: none")
        return
    console.print(f"[bold red]problems: {report.problem_count}[/]")
    for problem in report.problems:
        # One line per problem, never wrapped: operators grep for digests.
        console.print(f"  [red]{problem.kind}[/]: {problem.message}", soft_wrap=True)
    _more(console, report.problem_count, len(report.problems))


def _more(console: Console, total: int, shown: int) -> None:
    if total > shown:
        console.print(f"  ... and {total - shown} more (raise --limit to list them)")


COMMANDS = (gc, fsck)
