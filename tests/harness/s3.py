"""An S3 endpoint for tests: moto's server, in-process, on a free loopback port.

Plain helpers (no pytest here), used by the fixtures in `tests/plugins/s3.py` and by any
script that needs a throwaway S3 endpoint.
"""

from __future__ import annotations

import os
import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import ObjectIdentifierTypeDef

REGION = "us-east-1"

# Fake credentials, and the region, for every boto3 client the tests create. The variables
# that could point boto3 elsewhere (a profile, a config file, an endpoint override) are
# cleared so that a developer's own AWS setup never leaks into a test run.
FAKE_AWS_ENVIRONMENT: dict[str, str] = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
CLEARED_AWS_VARIABLES = ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION")

# Generous: the server binds in milliseconds; the bound only exists so that a server thread
# that died before binding cannot hang the session.
START_TIMEOUT = 30.0


class MotoUnavailableError(RuntimeError):
    """moto's server is not installed or did not start."""


@dataclass
class MotoServer:
    """A running moto server; `stop()` shuts it down."""

    endpoint_url: str
    _server: Any

    def stop(self) -> None:
        self._server.stop()


def start_moto(host: str = "127.0.0.1") -> MotoServer:
    """Start moto's threaded server on `host` and a port the OS picks."""
    try:
        from moto.server import ThreadedMotoServer  # noqa: PLC0415 (optional dependency)
    except ImportError as exc:
        raise MotoUnavailableError(f"moto[server] is not importable: {exc}") from exc
    server = ThreadedMotoServer(ip_address=host, port=0, verbose=False)
    # `start()` waits without a timeout for the server thread to bind; if that thread dies
    # first, it would wait forever. Waiting for it from a helper thread bounds the wait.
    starter = threading.Thread(target=server.start, name="moto-start", daemon=True)
    starter.start()
    starter.join(START_TIMEOUT)
    if starter.is_alive():
        raise MotoUnavailableError(f"moto's server did not start within {START_TIMEOUT} s")
    bound_host, port = server.get_host_and_port()
    return MotoServer(f"http://{bound_host}:{port}", server)


def raw_client(endpoint_url: str, session: boto3.session.Session | None = None) -> S3Client:
    """Return a plain boto3 S3 client for `endpoint_url`, to set up or inspect a bucket."""
    config = Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1})
    session = session or boto3.session.Session()
    return session.client("s3", endpoint_url=endpoint_url, region_name=REGION, config=config)


def unique_bucket_name() -> str:
    """Return a valid bucket name no other test uses."""
    return f"skillreg-test-{uuid.uuid4().hex[:20]}"


def all_keys(client: S3Client, bucket: str) -> set[str]:
    """Return every key in `bucket`, whatever its prefix."""
    keys: set[str] = set()
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys.update(item["Key"] for item in page.get("Contents", []))
    return keys


def empty_and_delete_bucket(client: S3Client, bucket: str) -> None:
    """Delete every object in `bucket`, then the bucket; a missing bucket is fine."""
    if bucket not in {entry["Name"] for entry in client.list_buckets().get("Buckets", [])}:
        return
    keys = sorted(all_keys(client, bucket))
    for start in range(0, len(keys), 1000):
        batch: list[ObjectIdentifierTypeDef] = [{"Key": key} for key in keys[start : start + 1000]]
        client.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
    client.delete_bucket(Bucket=bucket)
