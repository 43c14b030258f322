"""Test harness: every service a test needs is started here, never by hand.

- PostgreSQL: `tests/plugins/postgres.py` (starts the installed cluster, or uses
  `SKILLREG_TEST_POSTGRES_URL`); each test gets its own fresh database.
- S3: `tests/plugins/s3.py` (moto's server on an ephemeral loopback port).
On CI (`CI` set) a service that cannot start fails the run instead of skipping.
"""

pytest_plugins = ["tests.plugins.s3", "tests.plugins.postgres"]
