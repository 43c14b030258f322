"""The library's API: `Registry`, and the namespaces for its rarer capabilities.

    async with Registry.open() as reg:
        pub = await reg.write_package(Scope("acme"), "pdf-report", files, expected_head=None,
                                      origin=Origin.EDIT, actor="u1", sources=["chat:42"])
        pkg = await reg.read_package(Scope("acme"), "pdf-report")
        report = await reg.gc.collect()

`Registry` itself (`registry.py`) carries what owners and writers do every day: write, edit,
restore and read packages; history and diffs; proposals; the owner's controls; approvals
and exclusions; materialisation to disk; full-text search. The rest are namespaces over
the same `Context`, one module each:

    reg.marketplace   the catalog of listings; install and update jobs    marketplace.py
    reg.gc            garbage collection, retention, the integrity check  gc.py
    reg.uploads       the two-phase upload: blobs by digest, a manifest   uploads.py
    reg.tokens        the HTTP service's access tokens                    tokens.py
    reg.ops           readiness and service-wide figures                  ops.py
    reg.learning      decisions, pending writes, suppressions, status     learning.py
    reg.targets       desired state and records for remote reconcilers    targets.py
    reg.discovery     the Agent Skills discovery index and its artifacts  discovery.py
    reg.trust         signing keys; every version's attestation           trust.py
    reg.clawhub       the catalog as the `clawhub` client sees it         clawhub.py
    reg.rescan        rescans when the content rules change; reviews      rescan.py

Every method forwards to a service (`registry/services/<capability>/`); the docstrings here
are the reference.
"""

from __future__ import annotations

from registry.api.registry import Registry
from registry.errors import NotInitialized

__all__ = ["NotInitialized", "Registry"]
