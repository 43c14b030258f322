"""`skillreg serve`: the HTTP API on uvicorn, over the configured database and blob store."""

from __future__ import annotations

import os
import re
import socket
from dataclasses import replace

import click

from registry.cli.common import CliState, DecimalRange, json_option, redact, run_async
from registry.cli.exits import UNAVAILABLE
from registry.cli.output import Output
from registry.settings import trusted_proxies


def _trusted_proxies(_: click.Context, __: click.Parameter, value: str | None) -> str | None:
    try:
        return None if value is None else trusted_proxies(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


_SECONDS = re.compile(r"[0-9]{1,4}(?:\.[0-9]{1,3})?")
_MAX_SECONDS = 3600.0


def _seconds(_: click.Context, __: click.Parameter, value: str | None) -> float | None:
    # ASCII decimals, checked before `float()`, which would also take `nan` and `inf`.
    if value is None:
        return None
    if not _SECONDS.fullmatch(value) or not 0 < float(value) <= _MAX_SECONDS:
        msg = f"expected seconds, more than 0 and at most {_MAX_SECONDS:g} (e.g. 10 or 2.5)"
        raise click.BadParameter(msg)
    return float(value)


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
@click.option(
    "--forwarded-allow-ips",
    callback=_trusted_proxies,
    help="Proxies whose X-Forwarded-Proto and X-Forwarded-For are believed: addresses or "
    "networks, comma-separated, or * [default: SKILLREG_FORWARDED_ALLOW_IPS, else "
    "127.0.0.1,::1].",
)
@click.option(
    "--header-timeout",
    callback=_seconds,
    metavar="SECONDS",
    help="Seconds a connection has to send each request head, then it is closed "
    "[default: SKILLREG_HTTP_HEADER_TIMEOUT, else 10].",
)
@click.option(
    "--keep-alive-timeout",
    type=DecimalRange(1, 3600),
    help="Seconds an idle connection is kept between requests "
    "[default: SKILLREG_HTTP_KEEP_ALIVE_TIMEOUT, else 5].",
)
@click.option(
    "--limit-concurrency",
    type=DecimalRange(1, 1_000_000),
    help="Connections and requests served at once; past it, requests get 503 "
    "[default: SKILLREG_HTTP_LIMIT_CONCURRENCY, else no bound].",
)
@json_option
@run_async
async def serve(
    state: CliState,
    out: Output,
    *,
    host: str,
    port: int,
    log_level: str,
    jobs: bool,
    forwarded_allow_ips: str | None,
    header_timeout: float | None,
    keep_alive_timeout: int | None,
    limit_concurrency: int | None,
) -> None:
    """Serve the HTTP API until interrupted (SIGINT or SIGTERM end it gracefully).

    The database must be initialised (`skillreg init`); create access tokens with
    `skillreg token create`. Queued jobs run in this process unless `--no-jobs`; more
    workers run with `skillreg jobs run`. Behind a TLS proxy, name it with
    `--forwarded-allow-ips`, so that the console's cookie is sent `Secure`.
    """
    overrides = {
        "forwarded_allow_ips": forwarded_allow_ips,
        "http_header_timeout": header_timeout,
        "http_keep_alive_timeout": keep_alive_timeout,
        "http_limit_concurrency": limit_concurrency,
    }
    given = {name: value for name, value in overrides.items() if value is not None}
    state = replace(state, settings=state.settings.model_copy(update=given))
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
    # The web stack (FastAPI, uvicorn, the console's templates) is imported below: it costs
    # a third of the CLI's start, and only this command needs it. And it is imported once
    # the socket listens: a client that connects meanwhile (while the app is imported and the
    # registry opened) waits in the backlog for its answer, rather than being refused and
    # trying again later (`curl --retry-connrefused` waits 1, 2, 4... seconds between tries).
    with listener:
        from registry.http.server import server_for  # noqa: PLC0415

        async with state.open() as reg:
            reg.load_signing_key()
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
