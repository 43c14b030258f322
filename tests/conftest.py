"""Test harness: every service a test needs is started here, never by hand.

- PostgreSQL: `tests/plugins/postgres.py` (starts the installed cluster, or uses
  `SKILLREG_TEST_POSTGRES_URL`); each test gets its own fresh database.
- S3: `tests/plugins/s3.py` (moto's server on an ephemeral loopback port).
- Registries: `tests/plugins/registry.py` (a registry per test on each database).
On CI (`CI` set) a service that cannot start fails the run instead of skipping.
"""

from hypothesis import HealthCheck, settings

pytest_plugins = ["tests.plugins.s3", "tests.plugins.postgres", "tests.plugins.registry"]

# Performance is measured by `make bench`, never by timing inside tests: a shared, noisy
# machine must not turn a slow example into a failure.
settings.register_profile("skillreg", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("skillreg")
