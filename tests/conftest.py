"""Test harness: every service a test needs is started here, never by hand.

- PostgreSQL: `tests/plugins/postgres.py` (starts the installed cluster, or uses
  `SKILLREG_TEST_POSTGRES_URL`), each test gets its own fresh database.
- S3: `tests/plugins/s3.py` (moto's server on an ephemeral loopback port).
"""

pytest_plugins: list[str] = ["tests.plugins.s3"]
