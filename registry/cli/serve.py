"""`skillreg serve`: the HTTP API on uvicorn, over the configured database and blob store."""

from __future__ import annotations

import os
import socket

import click

from registry.cli.common import CliState, DecimalRange, json_option, redact, run_async
from registry.cli.exits import UNAVAILABLE
from registry.cli.output import Output


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, type=DecimalRange(0, 65535))
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
)
@click.option(
    "--jobs/--no-jobs",
    default=True,
    show_default=True,
    help="Run a job worker (marketplace installs and updates) in this process.",
)
@json_option
@run_async
async def serve(
    state: CliState, out: Output, *, host: str, port: int, log_level: str, jobs: bool
) -> None:
    """Serve the HTTP API until interrupted (SIGINT or SIGTERM end it gracefully).

    The database must be initialised (`skillreg init`); create access tokens with
    `skillreg token create`. Queued jobs run in this process unless `--no-jobs`; more
    workers run with `skillreg jobs run`.
    """
    # Imported here: the web stack (FastAPI, uvicorn, the console's templates) costs a
    # third of the CLI's start, and only this command needs it.
    from registry.http.server import server_for  # noqa: PLC0415

    # Bound before anything starts: an address in use is one line and exit 6, not an
    # application that logs its start-up and then stops.
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.create_server((host, port), family=family)
    except OSError as exc:
        out.error(
            OSError(
                f"cannot listen on {host}:{port}: {os.strerror(exc.errno) if exc.errno else exc}"
            ),
            UNAVAILABLE,
        )
        raise click.exceptions.Exit(UNAVAILABLE) from None
    with listener:
        async with state.open() as reg:
            server = server_for(reg, jobs=jobs, host=host, port=port, log_level=log_level)
            out.errors.print(
                f"serving {redact(state.settings.database_url)} and {state.settings.blob_url}"
            )
            # uvicorn announces no address for a socket it is given: this line does (the
            # real port, when given 0). Connections made before the application has started
            # wait in the socket's backlog.
            bound = listener.getsockname()[1]
            shown = f"[{host}]" if family == socket.AF_INET6 else host
            out.errors.print(f"running on http://{shown}:{bound} (Ctrl-C to stop)")
            await server.serve(sockets=[listener])
    out.emit({"stopped": True, "host": host, "port": port}, lambda c: c.print("stopped"))


COMMANDS = (serve,)
