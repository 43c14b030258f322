"""Configuration: the only module that reads the environment.

Every setting has a `SKILLREG_` environment variable (`SKILLREG_DATABASE_URL`, ...). Other
modules receive a `Settings` instance (or the values they need) from `Registry.open()`.
"""

from __future__ import annotations

import ipaddress
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from registry.domain.limits import Limits

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./.skillreg/registry.db"
DEFAULT_BLOB_URL = "file://./.skillreg/blobs"
DEFAULT_SIGNING_KEY_FILE = "./.skillreg/signing-key.pem"

MiB = 1024 * 1024
GiB = 1024 * MiB


def trusted_proxies(value: str) -> str:
    """`value` as a list of trusted proxies: `*`, or addresses and networks, comma-separated.

    uvicorn takes any other word silently as a name no peer ever has: a typo (`10.0.0.1/8`,
    a host name) would trust nobody, and the console's cookie would lose `Secure` without a
    word. Refused here instead, naming the entry and the rule. Empty: trust nobody.
    """
    entries = [entry.strip() for entry in value.split(",") if entry.strip()]
    if entries == ["*"]:
        return "*"
    for entry in entries:
        try:
            ipaddress.ip_network(entry) if "/" in entry else ipaddress.ip_address(entry)
        except ValueError:
            msg = (
                f"{entry!r} is not an IP address or network (a network's host bits zero, "
                "e.g. 10.0.0.0/8); list addresses and networks, comma-separated, or * alone"
            )
            raise ValueError(msg) from None
    return ",".join(entries)


class Settings(BaseSettings):
    """All settings of a registry process. Read from `SKILLREG_*` environment variables."""

    model_config = SettingsConfigDict(env_prefix="SKILLREG_", extra="ignore", frozen=True)

    database_url: str = DEFAULT_DATABASE_URL
    blob_url: str = DEFAULT_BLOB_URL

    # Package limits (DESIGN.md, "Path rules").
    max_files: int = Field(default=100, ge=1)
    max_file_bytes: int = Field(default=2 * MiB, ge=1)
    max_package_bytes: int = Field(default=20 * MiB, ge=1)
    max_depth: int = Field(default=8, ge=1)
    max_segment_bytes: int = Field(default=255, ge=1)

    # Capacity and quota, checked inside the publish transaction.
    capacity_saved: int = Field(default=150, ge=0, description="saved skills per scope")
    capacity_installed: int = Field(default=150, ge=0, description="installed skills per scope")
    workspace_quota_bytes: int = Field(default=1 * GiB, ge=0)
    # Materialisation targets a workspace may register: a read token registers them
    # (`skillreg sync`), so their number is bounded like every other thing a client stores.
    capacity_targets: int = Field(default=1000, ge=0, description="targets per workspace")

    # Timeouts (seconds): a stuck writer cannot hold a workspace longer than these, and a
    # write waits at most this long in all (docs/write-path.md, "Deadlines").
    lock_timeout: float = Field(default=5.0, gt=0, description="a write's lock wait, in all")
    statement_timeout: float = Field(default=30.0, gt=0)
    sqlite_busy_timeout: float = Field(default=5.0, gt=0)
    upload_timeout: float = Field(default=30.0, gt=0, description="a write's uploads, in all")
    write_timeout: float = Field(default=60.0, gt=0, description="a write, end to end")
    shutdown_timeout: float = Field(default=10.0, ge=0, description="close() waits for cleanup")

    # Database connections: the pool, and how long a transaction outside a write waits for
    # a connection (a write waits at most until its own deadline).
    db_pool_size: int = Field(default=5, ge=1)
    db_max_overflow: int = Field(default=5, ge=0)
    db_pool_timeout: float = Field(default=10.0, gt=0)

    # Blob stage.
    upload_concurrency: int = Field(default=8, ge=1)
    claim_ttl: float = Field(default=3600.0, gt=0, description="seconds a write's claim lives")
    s3_max_concurrency: int = Field(default=16, ge=1)
    s3_connect_timeout: float = Field(default=5.0, gt=0)
    s3_read_timeout: float = Field(default=20.0, gt=0)
    retry_attempts: int = Field(default=4, ge=1)

    # Garbage collection (docs/gc.md).
    gc_grace: float = Field(default=3600.0, ge=0, description="seconds an orphan is kept")
    gc_batch_size: int = Field(default=500, ge=1, description="rows or objects per GC batch")
    gc_delete_concurrency: int = Field(default=16, ge=1)
    # GC treats a claim as expired only this long after its expiry, so that a GC process
    # whose clock runs ahead of a writer's never deletes a blob the writer still holds.
    gc_clock_skew: float = Field(default=60.0, ge=0)
    # GC deletes a chunk's objects outside any transaction, under a fence on their rows that
    # lasts this long (plus `gc_clock_skew`). It starts a delete only in the first half;
    # the second half is the margin for a delete in flight. Writers that need a fenced
    # digest wait it out; a run killed mid-purge leaves its fence to expire (docs/gc.md).
    gc_purge_lease: float = Field(default=600.0, gt=0)

    # Retention (off by default): keep the newest N versions and/or those younger than D
    # days of every skill; the head, marketplace baselines and versions other rows name
    # are always kept (docs/gc.md, "Retention").
    retention_keep_versions: int | None = Field(default=None, ge=1)
    retention_keep_days: float | None = Field(default=None, gt=0)

    # Marketplace (docs/marketplace.md): the catalog scope, archive bounds, durable jobs.
    catalog_workspace: str = Field(default="catalog", description="the workspace of listings")
    archive_max_entries: int = Field(default=1000, ge=1)
    archive_max_bytes: int = Field(default=32 * MiB, ge=1, description="declared bytes, total")
    archive_max_ratio: float = Field(default=100.0, gt=1, description="expanded per compressed")
    job_lease: float = Field(default=60.0, gt=0, description="seconds a claimed job is leased")
    job_max_attempts: int = Field(default=5, ge=1)
    job_backoff_base: float = Field(default=2.0, gt=0, description="seconds before retry 1")
    job_backoff_max: float = Field(default=300.0, gt=0, description="seconds, at most")
    job_poll_interval: float = Field(default=1.0, gt=0, description="idle worker's wait")
    update_policy: Literal["merge", "propose"] = Field(
        default="merge", description="edited copies: apply clean merges, or always propose"
    )

    # The HTTP service (docs/http.md): where clients reach it, for `Location` headers.
    public_base_url: str | None = Field(
        default=None,
        description="e.g. https://skills.example.com; unset: Location is a relative reference",
    )

    # Wrong tokens (docs/http.md, "Access"): an address whose tokens failed this many
    # times within the window is refused (429) for the rest of it, in each process.
    auth_failure_limit: int = Field(default=20, ge=1, description="failed tokens per window")
    auth_failure_window: float = Field(default=60.0, gt=0, description="seconds")

    @field_validator("public_base_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            msg = "must be an http:// or https:// URL with a host"
            raise ValueError(msg)
        if parts.query or parts.fragment:
            msg = "must have no query or fragment"
            raise ValueError(msg)
        return value.strip().rstrip("/")

    # `skillreg serve`'s connections (docs/http.md, "Connections"). The proxies whose
    # `X-Forwarded-Proto` and `X-Forwarded-For` are believed (so that the console's cookie is
    # `Secure` behind a TLS proxy, and a client is known by its own address): addresses or
    # networks, comma-separated, `*` for any, empty for none. Then the limits of a
    # connection: the time to send a request head (`registry/http/connections.py`), the
    # time it may stay idle between requests, its head's bytes, and the connections and
    # requests served at once (more get 503; unset: no bound).
    forwarded_allow_ips: str = Field(default="127.0.0.1,::1", description="trusted proxies")
    http_header_timeout: float = Field(default=10.0, gt=0, description="seconds to send a head")
    http_keep_alive_timeout: int = Field(default=5, ge=1, description="seconds idle, at most")
    http_max_header_bytes: int = Field(default=16 * 1024, ge=1024, description="a request head")
    http_limit_concurrency: int | None = Field(default=None, ge=1, description="at once")

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _trusted_proxies(cls, value: str) -> str:
        return trusted_proxies(value)

    # The web console (docs/console.md): the key that signs its session cookies. Processes
    # serving one registry behind a load balancer must share it; without one, each process
    # draws its own at start, and its sessions end when it stops. The keys it replaced
    # still verify (a JSON list, newest first) until they are dropped: key rotation.
    console_secret: SecretStr | None = Field(default=None, description="signs console sessions")
    console_previous_secrets: list[SecretStr] = Field(
        default_factory=list, description="still verify console sessions"
    )
    console_session_hours: float = Field(default=12.0, gt=0, description="a sign-in lasts")

    # Discovery (docs/distribution.md): the scope whose index the host serves at its root,
    # `/.well-known/agent-skills/index.json`, as `workspace` or `workspace/agent`.
    discovery_root: str | None = Field(default=None, pattern=r"^[^/]+(/[^/]+)?$")
    # How long a cache (a browser, a CDN) may keep an artifact without asking again, and so
    # keep serving it after it is unpublished; the index itself is revalidated every time.
    discovery_max_age: int = Field(default=86400, ge=0, le=31536000, description="seconds")

    # The ClawHub-compatible API under `/clawhub` (docs/clawhub.md): `off` serves nothing
    # there; `public` serves the catalog's reads to anyone (the `clawhub` client sends no
    # token until `clawhub login`); `private` needs a token of any workspace to read.
    # Publishing always needs a `write` token of the catalog workspace.
    clawhub: Literal["off", "public", "private"] = Field(
        default="off", description="the ClawHub-compatible API"
    )

    # `skillreg sync` (docs/sync.md): what a host takes from a registry, and for how long.
    # The package limits above apply too: a host refuses what its own limits refuse.
    sync_max_json_bytes: int = Field(default=16 * MiB, ge=1024, description="a JSON answer")
    sync_request_timeout: float = Field(default=60.0, gt=0, description="a request, in all")
    sync_run_timeout: float = Field(default=1800.0, gt=0, description="a sync run, in all")

    # Signing (docs/trust.md): the Ed25519 key that signs every version's attestation. The
    # PEM itself (`SKILLREG_SIGNING_KEY`, for a secret store) or a file (0600) that holds
    # it; `skillreg init` and `skillreg keys create` make the file. Processes serving one
    # registry share the key.
    signing_key: SecretStr | None = Field(default=None, description="a PEM private key")
    signing_key_file: str = Field(default=DEFAULT_SIGNING_KEY_FILE, min_length=1)
    # How long a signed desired state is good for (seconds): a host that gets nothing
    # newer in that time stops applying and reports itself stale (docs/trust.md).
    state_validity: float = Field(default=86400.0, ge=4.0, description="a signed state lasts")

    @field_validator("database_url", "blob_url")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            msg = "must not be empty"
            raise ValueError(msg)
        return value.strip()

    def limits(self) -> Limits:
        """The package limits as a pure domain value."""
        return Limits(
            max_files=self.max_files,
            max_file_bytes=self.max_file_bytes,
            max_package_bytes=self.max_package_bytes,
            max_depth=self.max_depth,
            max_segment_bytes=self.max_segment_bytes,
        )
