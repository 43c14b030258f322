"""Test harness: every service a test needs is started here, never by hand.

- PostgreSQL: `tests/plugins/postgres.py` (starts the installed cluster, or uses
  `SKILLREG_TEST_POSTGRES_URL`); each test gets its own fresh database.
- S3: `tests/plugins/s3.py` (moto's server on an ephemeral loopback port).
- Registries: `tests/plugins/registry.py` (a registry per test on each database).
- The command line: `tests/plugins/cli.py` (`embedded`: the embedded default in a fresh
  working directory); `tests/support/cli.py` runs `skillreg` in-process.
- Deep folders: `tests/plugins/nesting.py` (`nested`, removed when the test ends).
On CI (`CI` set) a service that cannot start fails the run instead of skipping.
"""

import os

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from hypothesis import HealthCheck, settings

# Every version is signed (docs/trust.md). The registries the tests build take their key
# from the environment, as a deployment with a secret store does: one key per test run.
# Tests of key files (`skillreg init`, `keys create`, `rotate`) clear it; so does
# `embedded` (the CLI's defaults, where `skillreg init` makes the key file).
os.environ.setdefault(
    "SKILLREG_SIGNING_KEY",
    Ed25519PrivateKey.generate()
    .private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    .decode(),
)

pytest_plugins = [
    "tests.plugins.s3",
    "tests.plugins.postgres",
    "tests.plugins.registry",
    "tests.plugins.cli",
    "tests.plugins.nesting",
]

# Performance is measured by `make bench`, never by timing inside tests: a shared, noisy
# machine must not turn a slow example into a failure.
settings.register_profile("skillreg", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("skillreg")


_BACKENDS = ("memory", "local", "s3", "sqlite", "postgresql")

# Entry points reach the database only through `registry.api` (import-linter's `api-door`
# contract), and every capability's tests run on both databases: an entry point's tests
# run on SQLite, and on PostgreSQL only where marked `both_databases` (one end-to-end path
# per entry point, and what depends on the database: races, a NUL the server refuses).
# A capability test whose property lies outside the database (a loader reading files while
# they are swapped, the event loop while files are scanned) is marked `one_database`.
_ENTRY_POINT_TESTS = ("tests/http/", "tests/console/", "tests/cli/")


def pytest_collection_modifyitems(config, items):
    kept, dropped = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        on_postgresql = params.get("database_url") == "postgresql"
        entry_point = item.nodeid.startswith(_ENTRY_POINT_TESTS)
        if on_postgresql and (
            (entry_point and item.get_closest_marker("both_databases") is None)
            or item.get_closest_marker("one_database") is not None
        ):
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    # Modules with a `slow` test first (whole, so module fixtures are made once): workers
    # given the long tests early finish together, instead of one running the wheel test
    # alone at the end. The order within each group stays the collection order.
    long_modules = {item.nodeid.split("::")[0] for item in kept if item.get_closest_marker("slow")}
    items[:] = sorted(kept, key=lambda item: item.nodeid.split("::")[0] not in long_modules)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Show which backends the run exercised: every seam must run on all of its backends."""
    counts: dict[str, dict[str, int]] = {}
    for outcome in ("passed", "failed", "error"):
        for report in terminalreporter.stats.get(outcome, []):
            if getattr(report, "when", "call") not in ("call", None):
                continue
            params = report.nodeid.rpartition("[")[2].rstrip("]").split("-")
            for backend in _BACKENDS:
                if backend in params:
                    if "test_conformance" in report.nodeid:
                        suite = "blob store conformance suite"
                    elif backend in ("sqlite", "postgresql"):
                        suite = "database-backed tests"
                    else:
                        suite = "other blob store tests"
                    key = f"{suite} on {backend}"
                    counts.setdefault(key, {}).setdefault(outcome, 0)
                    counts[key][outcome] += 1
    if not counts:
        return
    terminalreporter.section("backends exercised")
    for key in sorted(counts):
        detail = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts[key].items()))
        terminalreporter.write_line(f"{key:<40} {detail}")
