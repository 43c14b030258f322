"""The sync client: a host keeps a target folder equal to a registry's desired state over HTTP.

`skillreg sync` needs no database and no blob store, only a registry's URL and a token.
This package is that client, beside `registry.http` (the server it talks to):

    http.py        the registry's HTTP API within bounds: URL rules, sizes, deadlines, no
                   redirects, problem documents back into the registry's errors
    admission.py   what a host admits from a desired state: the write path's own rules
    remote.py      the engine's `Source` over that API, with a local blob cache
    sync.py        `Sync`: one run (`once`) or a watch loop (`watch`) with backoff

The engine it feeds is `services/materialize/reconcile.py`, the one `skillreg reconcile`
uses; the JSON both ends exchange is `registry.wire`.
"""

from registry.client.http import Bounds
from registry.client.sync import Backoff, Sync

__all__ = ["Backoff", "Bounds", "Sync"]
