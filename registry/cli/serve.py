"""`skillreg serve`: the HTTP API on uvicorn, over the configured database and blob store."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

import click
import uvicorn

from registry.cli.common import CliState, json_option, redact, run_async
from registry.cli.output import Output
from registry.http import accesslog
from registry.http.app import create_app

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Server(uvicorn.Server):
    """uvicorn, minus re-raising the stop signal once it has shut down.

    uvicorn re-raises SIGINT or SIGTERM after a graceful shutdown, which would interrupt
    the registry's own close (its connections) with a KeyboardInterrupt, or kill the
    process before it. The signal already did its job: stop serving.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in _STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535))
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
    async with state.open() as reg:
        config = uvicorn.Config(
            create_app(reg, jobs=jobs),
            host=host,
            port=port,
            log_level=log_level,
            lifespan="on",
            server_header=False,
        )
        # After the Config, which configures uvicorn's loggers: tokens sent in a query
        # string never reach the access log.
        accesslog.install()
        server = _Server(config)
        # uvicorn announces the address it bound (the real port, when given 0).
        out.errors.print(
            f"serving {redact(state.settings.database_url)} and {state.settings.blob_url}"
        )
        await server.serve()
    out.emit({"stopped": True, "host": host, "port": port}, lambda c: c.print("stopped"))


COMMANDS = (serve,)
