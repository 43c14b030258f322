"""pytest plugin: an S3 endpoint (moto's server) for the session, a fresh bucket per test.

`s3_server` starts moto on an ephemeral loopback port with fake credentials in the
environment. If moto cannot start, tests that need it are skipped, except in CI (`CI` set),
where a missing S3 endpoint fails the run instead of silently shrinking it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import boto3
import pytest

from tests.harness.s3 import (
    CLEARED_AWS_VARIABLES,
    FAKE_AWS_ENVIRONMENT,
    REGION,
    MotoUnavailableError,
    empty_and_delete_bucket,
    raw_client,
    start_moto,
    unique_bucket_name,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mypy_boto3_s3 import S3Client

S3_PREFIX = "blobs"


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """Yield the endpoint URL of a moto S3 server that lives for the whole session."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in FAKE_AWS_ENVIRONMENT.items():
            patch.setenv(name, value)
        for name in CLEARED_AWS_VARIABLES:
            patch.delenv(name, raising=False)
        try:
            server = start_moto()
        except MotoUnavailableError as exc:
            if os.environ.get("CI"):
                pytest.fail(f"CI needs the S3 endpoint, and moto did not start: {exc}")
            pytest.skip(f"moto's S3 server is unavailable: {exc}")
        try:
            yield server.endpoint_url
        finally:
            server.stop()


@pytest.fixture(scope="session")
def s3_session(s3_server: str) -> boto3.session.Session:
    """One boto3 session for the tests' clients and stores: its model cache makes each
    further client cost milliseconds instead of a tenth of a second."""
    return boto3.session.Session()


@pytest.fixture(scope="session")
def s3_client(s3_server: str, s3_session: boto3.session.Session) -> Iterator[S3Client]:
    """A plain boto3 client for the endpoint, to set up and inspect buckets behind a store."""
    client = raw_client(s3_server, s3_session)
    yield client
    client.close()


@pytest.fixture
def s3_bucket(s3_client: S3Client) -> Iterator[str]:
    """Create a fresh, uniquely named bucket; empty and delete it afterwards."""
    bucket = unique_bucket_name()
    s3_client.create_bucket(Bucket=bucket)
    yield bucket
    empty_and_delete_bucket(s3_client, bucket)


@pytest.fixture
def s3_blob_url(s3_server: str, s3_bucket: str) -> str:
    """Return `s3://BUCKET/blobs?endpoint_url=...&region=...` for a fresh bucket."""
    query = urlencode({"endpoint_url": s3_server, "region": REGION})
    return f"s3://{s3_bucket}/{S3_PREFIX}?{query}"
