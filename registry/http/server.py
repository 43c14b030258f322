"""`skillreg serve`'s server: the HTTP app over a registry, under uvicorn.

Kept apart from the CLI so that only `serve` pays for importing the web stack.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

import uvicorn

from registry.api import Registry
from registry.http import accesslog
from registry.http.app import create_app
from registry.http.connections import header_deadline

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


def server_for(
    reg: Registry, *, jobs: bool, host: str, port: int, log_level: str
) -> uvicorn.Server:
    """The server for `reg`'s HTTP app (and its job worker, with `jobs`), not yet started.

    Its connections follow `reg.settings` (docs/http.md, "Connections").
    """
    settings = reg.settings
    config = uvicorn.Config(
        create_app(reg, jobs=jobs),
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        server_header=False,
        # Always given, so that uvicorn never reads FORWARDED_ALLOW_IPS from the
        # environment behind the settings' back.
        proxy_headers=True,
        forwarded_allow_ips=settings.forwarded_allow_ips,
        # h11, with a deadline for each request head (connections.py), whatever else is
        # installed; and the limits uvicorn has options for.
        http=header_deadline(settings.http_header_timeout),
        timeout_keep_alive=settings.http_keep_alive_timeout,
        h11_max_incomplete_event_size=settings.http_max_header_bytes,
        limit_concurrency=settings.http_limit_concurrency,
    )
    # After the Config, which configures uvicorn's loggers: tokens sent in a query string
    # never reach the access log.
    accesslog.install()
    return _Server(config)
