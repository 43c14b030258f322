"""Bearer tokens and the one table of the role every endpoint needs.

`authorize` is the dependency of every endpoint that needs a token. It looks the route
up in `ROLES` by its name (the OpenAPI operation id), so an endpoint cannot be added
without deciding its role: an unlisted route fails closed (and a test lists them all).

Order of the checks, and why:
0. an address whose tokens failed too often lately: 429, its token not even looked at
   (`throttle.py`);
1. no token, or one that does not authenticate: 401 (`WWW-Authenticate: Bearer`);
2. a path naming another workspace than the token's: 404 `not_found`, whatever the role
   and whether or not the resource exists, so a token learns nothing about other
   workspaces (never 403, which would say "it is there, but not for you");
3. a role below the endpoint's: 403 `forbidden`;
4. publishing to the catalog (`CATALOG_PUBLISH`) with a token of another workspace than
   the catalog's: 403 `forbidden` (the catalog is readable by every token, so saying so
   leaks nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from registry.api import Registry
from registry.api.types import TokenInfo
from registry.domain.access import Role
from registry.errors import Forbidden, Unauthenticated
from registry.http.problems import HttpProblem
from registry.http.throttle import client_address, failures_of, seconds

# Route name (operation id) -> the role it needs; None: no token at all.
ROLES: Final[dict[str, Role | None]] = {
    # operators
    "healthz": None,
    "readyz": None,
    "metrics": None,
    "openapi": None,
    "service_status": Role.ADMIN,
    # skills and packages
    "list_skills": Role.READ,
    "get_skill": Role.READ,
    "head_skill": Role.READ,
    "get_version": Role.READ,
    "get_archive": Role.READ,
    "get_attestation": Role.READ,
    "get_keys": None,
    "put_skill": Role.WRITE,
    # history, state and owner decisions
    "get_history": Role.READ,
    "get_diff": Role.READ,
    "get_state": Role.READ,
    "restore_skill": Role.OWNER,
    "change_state": Role.OWNER,
    "delete_skill": Role.OWNER,
    # revocations: yank, unyank (the owner), and who still holds a revoked version
    "yank_version": Role.OWNER,
    "unyank_version": Role.OWNER,
    "list_revocations": Role.READ,
    # proposals
    "list_proposals": Role.READ,
    "get_proposal": Role.READ,
    "decide_proposal": Role.OWNER,
    # learning: one decision list, pending writes, suppressions, status, loads
    "list_decisions": Role.READ,
    "decide_many": Role.OWNER,
    "list_pending_writes": Role.READ,
    "apply_pending_writes": Role.OWNER,
    "drop_pending_write": Role.OWNER,
    "list_suppressions": Role.READ,
    "lift_suppression": Role.OWNER,
    "learning_status": Role.READ,
    "record_load": Role.WRITE,
    "list_loads": Role.READ,
    # blobs
    "head_blob": Role.READ,
    "get_blob": Role.READ,
    "put_blob": Role.WRITE,
    # sync over HTTP (routes/targets.py): recording what a target holds changes no skill,
    # so a host that only loads skills needs no more than `read`
    "get_desired": Role.READ,
    "register_target": Role.READ,
    "record_applied": Role.READ,
    "report_trust": Role.READ,
    # the catalog (shared by every workspace; publishing: the catalog workspace's tokens)
    "list_listings": Role.READ,
    "get_listing": Role.READ,
    "get_listing_archive": Role.READ,
    "put_listing": Role.WRITE,
    # install and update jobs
    "install_listing": Role.WRITE,
    "update_skill": Role.WRITE,
    "list_jobs": Role.READ,
    "get_job": Role.READ,
    # the rescan when the content rules change (service-wide: admin), and its reviews
    "start_rescan": Role.ADMIN,
    "get_rescan": Role.ADMIN,
    "list_reviews": Role.READ,
    "approve_review": Role.OWNER,
    # search
    "search_skills": Role.READ,
    # discovery: the owner's settings, and the index and its artifacts (a scope the owner
    # made public serves these to anyone, without a token: registry/http/routes/wellknown.py)
    "get_discovery_settings": Role.READ,
    "put_discovery_settings": Role.OWNER,
    "get_discovery_root_index": Role.READ,
    "head_discovery_root_index": Role.READ,
    "get_discovery_index": Role.READ,
    "head_discovery_index": Role.READ,
    "get_discovery_root_versions": Role.READ,
    "head_discovery_root_versions": Role.READ,
    "get_discovery_versions": Role.READ,
    "head_discovery_versions": Role.READ,
    "get_discovery_root_snapshot": Role.READ,
    "head_discovery_root_snapshot": Role.READ,
    "get_discovery_snapshot": Role.READ,
    "head_discovery_snapshot": Role.READ,
    "get_legacy_root_index": Role.READ,
    "head_legacy_root_index": Role.READ,
    "get_legacy_index": Role.READ,
    "head_legacy_index": Role.READ,
    "get_legacy_root_file": Role.READ,
    "head_legacy_root_file": Role.READ,
    "get_legacy_file": Role.READ,
    "head_legacy_file": Role.READ,
    "get_discovery_archive": Role.READ,
    "head_discovery_archive": Role.READ,
    "get_discovery_file": Role.READ,
    "head_discovery_file": Role.READ,
}

# Routes that write the catalog: only tokens of the catalog workspace may call them.
CATALOG_PUBLISH: Final = frozenset({"put_listing"})

bearer = HTTPBearer(auto_error=False, description="`skr_...` token from `skillreg token create`")


@dataclass(frozen=True)
class Caller:
    """Who is calling: the authenticated token."""

    token: TokenInfo

    @property
    def principal(self) -> str:
        """Who the caller really is: recorded and signed with every version it writes."""
        return f"token:{self.token.id}"

    @property
    def actor(self) -> str:
        """The actor recorded for the caller's writes when the request names none."""
        return self.principal


def registry_of(request: Request) -> Registry:
    """The registry the app serves, acting for the request's authenticated caller (if any).

    A route that writes must have authorized first (`Depends(authorize)` runs before its
    body): the versions it writes record and sign the caller's token, never the actor the
    request declares.
    """
    registry: Registry = request.app.state.registry
    caller: Caller | None = getattr(request.state, "caller", None)
    return registry if caller is None else registry.acting_as(caller.principal)


async def authorize(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer),  # noqa: B008 - FastAPI's idiom
) -> Caller:
    """Authenticate the bearer token and check it against the route's workspace and role."""
    return await authenticate(request, credentials, request.path_params.get("workspace"))


async def authenticate(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None,
    workspace: str | None,
    *,
    needed: Role | None = None,
) -> Caller:
    """The checks of `authorize` for a route whose workspace is `workspace` (None: none).

    The role comes from `ROLES`, or from `needed` for a route outside the OpenAPI
    document (the ClawHub-compatible API, registry/http/routes/clawhub.py), whose routes
    decide it themselves.
    """
    route = request.scope["route"].name
    if needed is None:
        needed = ROLES[route]
    if needed is None:
        msg = f"route {route!r} needs no token and must not authorize"
        raise AssertionError(msg)
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise Unauthenticated
    registry = registry_of(request)
    failures, address = failures_of(request), client_address(request)
    wait = failures.retry_after(address)
    if wait is not None:
        raise HttpProblem(
            "too_many_failures",
            "too many failed authentications from this address; retry later",
            headers={"Retry-After": str(seconds(wait))},
        )
    try:
        token = await registry.tokens.authenticate(credentials.credentials)
    except Unauthenticated:
        failures.failed(address)
        raise
    if workspace is not None and workspace != token.workspace:
        raise HttpProblem("not_found", "not found")
    if not token.role.allows(needed):
        raise Forbidden(needed.value, token.role.value)
    catalog = registry.settings.catalog_workspace
    if route in CATALOG_PUBLISH and token.workspace != catalog:
        raise HttpProblem(
            "forbidden",
            f"publishing listings needs a token of the catalog workspace {catalog!r}",
            status=403,
            extra={"details": {"needed_workspace": catalog}},
        )
    caller = Caller(token)
    request.state.caller = caller
    return caller
