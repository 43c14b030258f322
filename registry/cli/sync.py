"""`skillreg sync`: keep a target directory equal to a scope's desired state, over HTTP only.

Needs no database and no blob store: a registry's URL and a token (`read` is enough).
`--once` runs once and exits like `reconcile` (0 when every skill converged, else the code
the failures share). Without it, sync runs until SIGINT or SIGTERM (exit 0): a report
whenever a run changed or failed something, and a line for every run that failed, with
the wait before the next (docs/sync.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from pathlib import Path

import click
from rich.console import Console

from registry import __version__
from registry.api.types import UNCHANGED, LockFile, ReconcileReport
from registry.cli.common import CliState, json_option, make_scope, run_async
from registry.cli.output import Output, shown, to_jsonable
from registry.cli.reconcile import failure_code, render_report, report_dict, target_options
from registry.client import Backoff, Bounds, Sync
from registry.client.trust import TrustRoot
from registry.domain.model import Scope


@click.command()
@click.option(
    "--from", "url", required=True, metavar="URL", help="The registry's base URL (skillreg serve)."
)
@click.option("--token", help="A token of the workspace (`read` is enough).")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Read the token from this file instead (keeps it out of the process list).",
)
@target_options
@click.option("--once", is_flag=True, help="Run once and exit (default: keep watching).")
@click.option(
    "--interval",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    help="Seconds between runs while watching (jittered).",
)
@click.option(
    "--max-backoff",
    type=click.FloatRange(min=0.1),
    default=300.0,
    show_default=True,
    help="The longest wait after failures in a row (jittered).",
)
@click.option(
    "--insecure-plain-http",
    "plain_http",
    is_flag=True,
    help="Accept an http:// URL to another machine: the token and every package travel "
    "unencrypted, readable and alterable by anyone on the way.",
)
@click.option(
    "--trust-keys",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="First sync of a target: pin the current keys of this keys document "
    "(`skillreg keys export` on the registry's side).",
)
@click.option(
    "--trust-fingerprint",
    metavar="KEYID",
    help="First sync of a target: pin the registry's key with this id (`skillreg keys "
    "list`); it is fetched and taken only if it hashes to the id.",
)
@json_option
@run_async
async def sync(
    state: CliState,
    out: Output,
    *,
    url: str,
    token: str | None,
    token_file: Path | None,
    workspace: str,
    agent: str,
    target: Path,
    mode: str | None,
    verify: bool,
    lock_path: Path | None,
    wait: bool,
    once: bool,
    interval: float,
    max_backoff: float,
    plain_http: bool,
    trust_keys: Path | None,
    trust_fingerprint: str | None,
) -> None:
    """Keep TARGET equal to the skills of WORKSPACE in use, from the registry at URL.

    Nothing the registry sends is trusted unchecked (docs/sync.md, "What a host
    refuses"): every slug, path and size passes the package rules and limits
    (SKILLREG_MAX_*), answers and runs are bounded in size and time
    (SKILLREG_SYNC_*), redirects are not followed, and http:// is refused for any
    host but this machine unless --insecure-plain-http.

    Every desired state is signed: the first sync of a target pins the registry's key
    (--trust-keys or --trust-fingerprint; never taken from the server unchecked), and
    a state that is not signed by it (or a key it endorsed), older than the one applied
    last, or expired, changes nothing (docs/trust.md).
    """
    settings = state.settings  # sync uses no database: only its limits and bounds
    scope = make_scope(workspace, agent)
    secret = await _token(token, token_file)
    lock = None
    if lock_path is not None:
        lock = LockFile.loads(await asyncio.to_thread(lock_path.read_bytes))
    if trust_keys is not None and trust_fingerprint is not None:
        raise click.UsageError("pin with one of --trust-keys and --trust-fingerprint")
    root = None
    if trust_keys is not None:
        root = TrustRoot.from_keys_file(trust_keys)
    elif trust_fingerprint is not None:
        root = TrustRoot.from_fingerprint(trust_fingerprint)
    syncer = Sync(
        url,
        secret,
        scope,
        target,
        mode=mode,
        verify=verify,
        lock=lock,
        wait=wait,
        user_agent=f"skillreg/{__version__}",
        limits=settings.limits(),
        bounds=Bounds(
            max_json_bytes=settings.sync_max_json_bytes,
            request_timeout=settings.sync_request_timeout,
            run_timeout=settings.sync_run_timeout,
        ),
        allow_plain_http=plain_http,
        trust=root,
    )
    async with syncer:
        if once:
            report = await syncer.once()

            def show(console: Console) -> None:
                render_report(report, console)
                console.print(trust_line(syncer), soft_wrap=True)

            out.emit({**report_dict(report), "trust": trust_dict(syncer)}, show)
            if not report.ok:
                raise click.exceptions.Exit(failure_code(report))
            return
        await _watch(syncer, out, scope, Backoff(interval=interval, cap=max_backoff))


async def _token(token: str | None, token_file: Path | None) -> str:
    if (token is None) == (token_file is None):
        msg = "give the token with exactly one of --token and --token-file"
        raise click.UsageError(msg)
    if token_file is not None:
        token = (await asyncio.to_thread(token_file.read_text, encoding="utf-8")).strip()
    assert token is not None
    return token


async def _watch(syncer: Sync, out: Output, scope: Scope, backoff: Backoff) -> None:
    """Watch until SIGINT or SIGTERM; a permanent error ends it with its exit code."""

    def on_report(report: ReconcileReport) -> None:
        if all(o.action == UNCHANGED for o in report.outcomes) and report.ok:
            return
        if out.as_json:
            _line(report_dict(report))
        else:
            render_report(report, out.console)

    def on_error(exc: BaseException, delay: float) -> None:
        if out.as_json:
            error = {"error": getattr(exc, "code", type(exc).__name__), "message": str(exc)}
            _line({**error, "retry_in": round(delay, 3)})
        else:
            out.errors.print(
                f"[yellow]sync of {scope} failed:[/] {shown(str(exc))}; retrying in {delay:.1f}s",
                soft_wrap=True,
            )

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    watcher = asyncio.ensure_future(
        syncer.watch(backoff=backoff, on_report=on_report, on_error=on_error)
    )
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({watcher, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
    if watcher.done():
        watcher.result()  # a permanent error: run_async reports it with its exit code
    # A filesystem step in flight finishes (old or new package, never a mix) before the
    # target is let go; the next sync completes whatever this run left undone.
    watcher.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watcher
    _stopped(out)


def trust_dict(syncer: Sync) -> dict[str, object] | None:
    """What the run concluded of the state it was served (docs/trust.md)."""
    pins = None if syncer.trust is None else syncer.trust.pinned
    if pins is None:
        return None
    return {
        "state": pins.status,
        "since": pins.since,
        "seq": None if pins.last is None else pins.last.seq,
        "expires": pins.expires,
        "detail": pins.detail,
        "keys": sorted(pins.keys),
    }


def trust_line(syncer: Sync) -> str:
    found = trust_dict(syncer)
    if found is None:
        return "trust: nothing pinned"
    line = f"trust: {found['state']}"
    if found["seq"] is not None:
        line += f", state {found['seq']}"
    if found["expires"] is not None:
        line += f" good until {found['expires']}"
    if found["state"] == "stale":
        line += f" (stale since {found['since']})"
    return shown(line)


def _stopped(out: Output) -> None:
    if out.as_json:
        _line({"stopped": True})
    else:
        out.errors.print("sync stopped")


def _line(data: object) -> None:
    sys.stdout.write(json.dumps(to_jsonable(data), sort_keys=True) + "\n")
    sys.stdout.flush()


COMMANDS = (sync,)
