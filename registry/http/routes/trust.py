"""Trust over HTTP: a version's attestation, and the keys that sign (docs/trust.md).

- `GET .../skills/{slug}/versions/{version}/attestation`: the version's DSSE envelope as
  the registry signed it (an in-toto Statement about the package's canonical digest), with
  its SHA-256 as the strong `ETag` and `Skillreg-Key-Id` naming the key. `read` role.
- `GET /.well-known/skillreg/keys.json`: the public keys with their validity, for hosts to
  pin and to verify attestations offline. Public: no token.
"""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import APIRouter, Depends, Path, Request, Response
from fastapi.responses import JSONResponse

from registry.domain.numbers import MAX_VERSION
from registry.http.auth import Caller, authorize, registry_of
from registry.http.routes.common import DEFAULT, Agent, Slug, Workspace, make_scope, problems

DSSE_JSON: Final = "application/vnd.dsse.envelope.v1+json"
KEYS_PATH: Final = "/.well-known/skillreg/keys.json"

router = APIRouter(tags=["trust"])

Authorized = Annotated[Caller, Depends(authorize)]


@router.get(
    "/v1/workspaces/{workspace}/skills/{slug}/versions/{version}/attestation",
    name="get_attestation",
    summary="A version's attestation: the DSSE envelope the registry signed",
    response_class=Response,
    responses={
        200: {"content": {DSSE_JSON: {"schema": {"type": "object"}}}},
        **problems(400, 403, 404),
    },
)
async def get_attestation(
    request: Request,
    *,
    workspace: Workspace,
    slug: Slug,
    version: Annotated[int, Path(ge=1, le=MAX_VERSION)],
    caller: Authorized,
    agent: Agent = DEFAULT,
) -> Response:
    """404 `attestation_missing` for a version published before versions were signed."""
    del caller
    found = await registry_of(request).trust.attestation(
        make_scope(workspace, agent), slug, version
    )
    headers = {
        "ETag": f'"{found.digest}"',
        "Skillreg-Key-Id": found.key_id,
        "Cache-Control": "public, max-age=31536000, immutable",
    }
    return Response(found.envelope, media_type=DSSE_JSON, headers=headers)


@router.get(
    KEYS_PATH,
    name="get_keys",
    summary="The registry's public signing keys, with their validity",
    responses={200: {"content": {"application/json": {"schema": {"type": "object"}}}}},
)
async def get_keys(request: Request) -> JSONResponse:
    """Every key that signs or signed, and since and until when.

    Each entry: `keyid`, `public_key` (hex), `valid_from`, `valid_until` (null while it signs).
    """
    document = await registry_of(request).trust.keys_document()
    return JSONResponse(document, headers={"Cache-Control": "no-cache"})
