"""Marketplace commands: the catalog, install, update, and the job queue.

    skillreg catalog publish DIR --listing ID       skillreg catalog import ARCHIVE --listing ID
    skillreg catalog list | show LISTING[@V]
    skillreg install LISTING[@VERSION] --workspace W [--agent A]
    skillreg update W/SLUG [--to N] [--policy merge|propose]
    skillreg jobs run [--once|--drain]              skillreg jobs list | show ID

`install` and `update` queue a durable job and, unless `--queue-only`, run it at once in
this process; a job whose attempt failed stays queued for `skillreg jobs run` (or fails for
good, with its reason). Progress bars appear on a terminal, never with `--json`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn
from rich.table import Table

from registry.api import Registry
from registry.api.folders import read_folder
from registry.api.types import DEFAULT_ACTOR, POLICIES, RESCAN, JobOutcome, JobRow, Policy
from registry.cli.common import (
    FOLDER,
    ROW_ID,
    VERSION,
    CliState,
    DecimalRange,
    agent_option,
    json_option,
    make_scope,
    parse_ref,
    run_async,
    version_number,
)
from registry.cli.exits import EXIT_CODES, UNEXPECTED, exit_code
from registry.cli.output import Output, human_size, to_jsonable
from registry.cli.packages import _pub, _publication_line, parse_expect
from registry.cli.rescan import rescan_line
from registry.domain.numbers import MAX_VERSION
from registry.errors import RegistryError, by_code

_STATUSES = ("queued", "running", "succeeded", "failed")


def parse_listing(ref: str) -> tuple[str, int | None]:
    """`LISTING[@VERSION]` -> (listing, version)."""
    listing, sep, raw = ref.partition("@")
    if not listing:
        msg = f"{ref!r}: expected LISTING[@VERSION]"
        raise click.BadParameter(msg)
    if not sep:
        return listing, None
    version = version_number(raw)
    if version is None:
        msg = f"{ref!r}: the version after '@' must be a whole number from 1 to {MAX_VERSION}"
        raise click.BadParameter(msg)
    return listing, version


@contextmanager
def _progress(out: Output) -> Iterator[Progress | None]:
    """A transient progress display on a terminal; None for JSON or a pipe."""
    if out.as_json or not out.console.is_terminal:
        yield None
        return
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=out.console,
        transient=True,
    )
    with progress:
        yield progress


# ---------------------------------------------------------------- catalog


@click.group()
def catalog() -> None:
    """The marketplace catalog: listings published and imported as packages."""


@catalog.command(name="publish")
@click.argument("directory", type=FOLDER)
@click.option("--listing", required=True, help="The listing id (a slug).")
@click.option("--expect-head", "expect", help="N, 'new' or 'any' (default any).")
@click.option("-m", "--message", default="", help="A message stored with the version.")
@click.option("--actor", default="cli", show_default=True, help="Who is publishing.")
@json_option
@run_async
async def catalog_publish(
    state: CliState,
    out: Output,
    *,
    directory: Path,
    listing: str,
    expect: str | None,
    message: str,
    actor: str,
) -> None:
    """Publish the skill folder DIRECTORY as the next version of a listing."""
    expected = parse_expect(expect)
    files = await asyncio.to_thread(read_folder, directory, limits=state.settings.limits())
    async with state.open() as reg:
        pub = await reg.marketplace.publish_listing(
            listing, files, actor=actor, message=message, expected_head=expected
        )
    out.emit(
        {"listing": listing, **_pub(pub)},
        lambda c: c.print(_publication_line(f"listing {listing}", pub)),
    )


@catalog.command(name="import")
@click.argument("archive", type=click.Path(exists=True, path_type=Path))
@click.option("--listing", required=True, help="The listing id (a slug).")
@click.option("-m", "--message", default="", help="A message stored with the version.")
@click.option("--actor", default="cli", show_default=True, help="Who is importing.")
@json_option
@run_async
async def catalog_import(
    state: CliState, out: Output, *, archive: Path, listing: str, message: str, actor: str
) -> None:
    """Import ARCHIVE (.zip, .tar.gz, .tar, or a folder) as the next version of a listing.

    The archive is read safely in memory: links, devices, absolute or escaping names,
    duplicates, names that are not UTF-8 and bombs are refused (exit 3) before anything
    is stored.
    """
    with _progress(out) as progress:
        task = None if progress is None else progress.add_task(f"reading {archive.name}")

        def entry(_path: str) -> None:
            if progress is not None and task is not None:
                progress.advance(task)

        async with state.open() as reg:
            result = await reg.marketplace.import_listing(
                listing, archive, actor=actor, message=message, on_entry=entry
            )
    pub = result.publication
    data = {
        "listing": listing,
        "format": result.format,
        "files": result.files,
        "stripped": result.stripped,
        **_pub(pub),
    }

    def render(console: Console) -> None:
        stripped = f", top folder {result.stripped!r} stripped" if result.stripped else ""
        console.print(f"read {result.files} files from a {result.format}{stripped}")
        console.print(_publication_line(f"listing {listing}", pub))

    out.emit(data, render)


@catalog.command(name="list")
@click.option("--limit", default=50, show_default=True, type=DecimalRange(1, 500))
@click.option("--after", help="Continue after this listing (from the previous page).")
@json_option
@run_async
async def catalog_list(state: CliState, out: Output, *, limit: int, after: str | None) -> None:
    """List the catalog's listings."""
    async with state.open() as reg:
        page = await reg.marketplace.list_listings(limit=limit, after=after)

    def render(console: Console) -> None:
        if not page.items:
            console.print("no listings")
            return
        table = Table(show_header=True, header_style="bold", box=None)
        for column in ("listing", "version", "files", "size", "manifest"):
            table.add_column(column)
        for item in page.items:
            table.add_row(
                item.slug,
                str(item.head),
                str(item.file_count),
                human_size(item.total_size),
                item.manifest_hash[:12],
            )
        console.print(table)
        if page.next_after:
            console.print(f"more: --after {page.next_after}")

    out.emit(page, render)


@catalog.command(name="show")
@click.argument("ref")
@json_option
@run_async
async def catalog_show(state: CliState, out: Output, *, ref: str) -> None:
    """Show a listing version (LISTING[@VERSION]) and its files."""
    listing, version = parse_listing(ref)
    async with state.open() as reg:
        found = await reg.marketplace.listing(listing, version)
    data = {
        "listing": found.listing,
        "version": found.version,
        "head": found.head,
        "manifest_hash": found.manifest_hash,
        "origin": found.origin,
        "actor": found.actor,
        "message": found.message,
        "created_at": found.created_at,
        "files": [
            {"path": e.path, "digest": e.digest, "size": e.size, "executable": e.executable}
            for e in found.manifest.entries
        ],
    }

    def render(console: Console) -> None:
        console.print(
            f"[bold]{found.listing}[/] version {found.version} of {found.head}  "
            f"{found.manifest.file_count} files, {human_size(found.manifest.total_size)}"
        )
        console.print(f"manifest {found.manifest_hash}")
        for entry in found.manifest.entries:
            mode = "x" if entry.executable else "-"
            console.print(f"  {mode} {entry.size:>8} {entry.path}")

    out.emit(data, render)


# ---------------------------------------------------------------- install and update


def _job_dict(job: JobRow) -> dict[str, Any]:
    return {f: getattr(job, f) for f in JobRow.__slots__}


def _outcome_line(job: JobRow) -> str:
    if job.kind == RESCAN and job.status != "failed":
        return rescan_line(job)
    result = job.result or {}
    where = f"{result.get('workspace')}/{result.get('slug')}"
    outcome = result.get("outcome", job.status)
    if job.status == "succeeded":
        detail = f"{outcome}: {where} at version {result.get('version')}"
        if result.get("proposal") is not None:
            detail += f", proposal {result['proposal']} awaits the owner"
        if result.get("conflicts"):
            paths = ", ".join(c["path"] for c in result["conflicts"])
            detail += f" (conflicts: {paths})"
        return f"job {job.id} {job.kind}: {detail}"
    error = job.last_error or {}
    if job.status == "queued":
        return (
            f"job {job.id} {job.kind}: attempt {job.attempts} of {job.max_attempts} failed "
            f"({error.get('message')}); retry after {job.run_after:%Y-%m-%d %H:%M:%S}Z "
            "with `skillreg jobs run`"
        )
    if job.status == "running":
        return f"job {job.id} {job.kind}: running on {job.lease_owner}"
    return f"job {job.id} {job.kind}: failed after {job.attempts} attempts: {error.get('message')}"


def _recorded_error(outcome: JobOutcome) -> tuple[str, str, dict[str, Any], int] | None:
    """(code, message, details, exit code) of a failed attempt or a failed job, else None."""
    error = outcome.error
    if error is not None:
        details = error.details() if isinstance(error, RegistryError) else {}
        name = getattr(error, "code", type(error).__name__)
        return name, str(error), to_jsonable(details), exit_code(error)
    job = outcome.job
    if job.status != "failed":
        return None
    # A job that failed earlier (the same key again): its exit code comes from the class
    # its recorded error code names.
    recorded = job.last_error or {}
    name = str(recorded.get("code", "failed"))
    cls = by_code(name)
    code = next((c for k, c in EXIT_CODES if cls is not None and issubclass(cls, k)), UNEXPECTED)
    return name, str(recorded.get("message", "")), dict(recorded.get("details", {})), code


def _report(out: Output, outcome: JobOutcome) -> None:
    """Print what the job recorded; exit with the error's code if the job (attempt) failed."""
    job = outcome.job
    failure = _recorded_error(outcome)
    if failure is None:
        out.emit({"job": _job_dict(job)}, lambda c: c.print(_outcome_line(job), soft_wrap=True))
        return
    name, message, details, code = failure
    if out.as_json:
        body = {"job": _job_dict(job), "error": name, "message": message, "exit_code": code}
        out.emit({**body, "details": details}, lambda _c: None)
    else:
        out.errors.print(f"[bold red]error:[/] {_outcome_line(job)}", soft_wrap=True)
    raise SystemExit(code)


async def _run_now(
    reg: Registry, out: Output, job: JobRow, label: str, *, queue_only: bool
) -> JobOutcome:
    if queue_only or job.finished:
        return JobOutcome(job)
    with _progress(out) as progress:
        task = None if progress is None else progress.add_task(label, total=1)
        outcome = await reg.marketplace.worker().run_job(job.id)
        if progress is not None and task is not None:
            progress.advance(task)
    return outcome


key_option = click.option("--key", help="The idempotency key (default: derived from the request).")
queue_only_option = click.option(
    "--queue-only", is_flag=True, help="Only queue the job; `skillreg jobs run` runs it."
)


@click.command()
@click.argument("ref")
@click.option("--workspace", "-w", required=True, help="The workspace to install into.")
@agent_option
@key_option
@queue_only_option
@click.option("--actor", default=DEFAULT_ACTOR, show_default=True, help="Who installs.")
@json_option
@run_async
async def install(
    state: CliState,
    out: Output,
    *,
    ref: str,
    workspace: str,
    agent: str,
    key: str | None,
    queue_only: bool,
    actor: str,
) -> None:
    """Install the listing REF (LISTING[@VERSION], the newest by default) into a workspace."""
    listing, version = parse_listing(ref)
    scope = make_scope(workspace, agent)
    async with state.open() as reg:
        found = await reg.marketplace.listing(listing, version)
        enqueued = await reg.marketplace.enqueue_install(
            scope, listing, found.version, actor=actor, key=key
        )
        label = f"installing {listing}@{found.version} ({found.manifest.file_count} files)"
        outcome = await _run_now(reg, out, enqueued.job, label, queue_only=queue_only)
    _report(out, outcome)


@click.command()
@click.argument("ref")
@agent_option
@click.option("--to", "version", type=VERSION, help="A listing version (newest).")
@click.option(
    "--policy",
    type=click.Choice(POLICIES),
    help="Edited copies: apply a clean merge, or always propose (default from settings).",
)
@key_option
@queue_only_option
@click.option("--actor", default=DEFAULT_ACTOR, show_default=True, help="Who updates.")
@json_option
@run_async
async def update(
    state: CliState,
    out: Output,
    *,
    ref: str,
    agent: str,
    version: int | None,
    policy: str | None,
    key: str | None,
    queue_only: bool,
    actor: str,
) -> None:
    """Update the installed copy REF (WORKSPACE/SLUG) to its listing's newest version.

    An unedited copy becomes the new listing version; an edited one is merged per file,
    keeping the owner's changes, or a proposal is recorded for the owner to decide.
    """
    workspace, slug, pinned = parse_ref(ref)
    if pinned is not None:
        msg = "name the listing version with --to, not @N"
        raise click.BadParameter(msg)
    scope = make_scope(workspace, agent)
    async with state.open() as reg:
        enqueued = await reg.marketplace.enqueue_update(
            scope,
            slug,
            version=version,
            policy=_policy(policy),
            actor=actor,
            key=key,
        )
        target = enqueued.job.payload["version"]
        label = f"updating {workspace}/{slug} to listing version {target}"
        outcome = await _run_now(reg, out, enqueued.job, label, queue_only=queue_only)
    _report(out, outcome)


def _policy(value: str | None) -> Policy | None:
    return next((known for known in POLICIES if known == value), None)


# ---------------------------------------------------------------- jobs


@click.group()
def jobs() -> None:
    """The durable job queue: run workers, list and show jobs."""


@jobs.command(name="run")
@click.option("--once", is_flag=True, help="Run at most one job, then exit.")
@click.option("--drain", is_flag=True, help="Exit when no job is due.")
@click.option("--worker-id", help="This worker's name in leases (default host:pid:random).")
@json_option
@run_async
async def jobs_run(
    state: CliState,
    out: Output,
    *,
    once: bool,
    drain: bool,
    worker_id: str | None,
) -> None:
    """Run due jobs: forever (Ctrl-C stops and hands the current job back), or --once/--drain.

    Many workers may run at once on PostgreSQL; on SQLite run one at a time. A worker
    that runs forever first queues a rescan if the content rules changed.
    """
    done: list[JobRow] = []

    def report(outcome: JobOutcome) -> None:
        done.append(outcome.job)
        if not out.as_json:
            out.console.print(_outcome_line(outcome.job), soft_wrap=True)

    async with state.open() as reg:
        if not (once or drain):
            # A worker process that starts with other content rules than the last
            # rescan's queues one (a one-off `--once`/`--drain` run leaves that to it).
            await reg.rescan.start_if_rules_changed()
        worker = reg.marketplace.worker(worker_id=worker_id)
        ran = await worker.run(once=once, drain=drain, on_outcome=report)
    out.emit(
        {"worker": worker.worker_id, "ran": ran, "jobs": [_job_dict(j) for j in done]},
        lambda c: c.print(f"{ran} jobs run by {worker.worker_id}"),
    )


@jobs.command(name="list")
@click.option("--status", type=click.Choice(_STATUSES), help="Only jobs in this state.")
@click.option("--workspace", "-w", help="Only jobs acting on this workspace.")
@click.option("--limit", default=50, show_default=True, type=DecimalRange(1, 500))
@click.option("--before", type=ROW_ID, help="Continue before this job id (previous page).")
@json_option
@run_async
async def jobs_list(
    state: CliState,
    out: Output,
    *,
    status: str | None,
    workspace: str | None,
    limit: int,
    before: int | None,
) -> None:
    """List jobs, newest first."""
    async with state.open() as reg:
        page = await reg.marketplace.list_jobs(
            status=status, workspace=workspace, limit=limit, before=before
        )

    def render(console: Console) -> None:
        if not page.items:
            console.print("no jobs")
            return
        table = Table(show_header=True, header_style="bold", box=None)
        for column in ("id", "kind", "workspace", "status", "attempts", "updated", "detail"):
            table.add_column(column)
        for job in page.items:
            if job.status == "succeeded":
                detail = str((job.result or {}).get("outcome", ""))
            elif job.status == "running" and job.progress:
                detail = f"{job.progress.get('done')} of {job.progress.get('total')} done"
            else:
                detail = str((job.last_error or {}).get("message", ""))
            table.add_row(
                str(job.id),
                job.kind,
                job.workspace,
                job.status,
                f"{job.attempts}/{job.max_attempts}",
                f"{job.updated_at:%Y-%m-%d %H:%M:%S}",
                detail,
            )
        console.print(table)
        if page.next_before:
            console.print(f"more: --before {page.next_before}")

    out.emit({"items": [_job_dict(j) for j in page.items], "next_before": page.next_before}, render)


@jobs.command(name="show")
@click.argument("job_id", type=ROW_ID)
@json_option
@run_async
async def jobs_show(state: CliState, out: Output, *, job_id: int) -> None:
    """Show one job: its payload, attempts, lease, last error and result."""
    async with state.open() as reg:
        job = await reg.marketplace.job(job_id)

    def render(console: Console) -> None:
        console.print(_outcome_line(job), soft_wrap=True)
        for name in ("idempotency_key", "payload", "attempts", "last_error", "result"):
            console.print(f"  {name}: {getattr(job, name)}", soft_wrap=True)

    out.emit(_job_dict(job), render)


COMMANDS = (catalog, install, update, jobs)
