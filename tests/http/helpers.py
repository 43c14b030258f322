"""Small helpers for the HTTP tests."""

from __future__ import annotations

import json

from blake3 import blake3

from registry.domain.model import PackageFile
from tests.support.scopes import ACME

SKILLS = f"/v1/workspaces/{ACME.workspace}/skills"
BLOBS = f"/v1/workspaces/{ACME.workspace}/blobs"


def digest(data: bytes) -> str:
    return blake3(data).hexdigest()


def form(files: dict[str, bytes | PackageFile]) -> tuple[list, dict[str, str]]:
    """httpx `files` and `data` for a multipart package upload."""
    parts = []
    executable = []
    for path, value in files.items():
        data = value.data if isinstance(value, PackageFile) else value
        if isinstance(value, PackageFile) and value.executable:
            executable.append(path)
        parts.append((path, (path.rsplit("/", 1)[-1], data, "application/octet-stream")))
    return parts, {"meta": json.dumps({"executable": executable})}


def manifest(files: dict[str, bytes | PackageFile], **options) -> dict:
    """The JSON manifest body naming `files` by digest."""
    entries = []
    for path, value in files.items():
        data = value.data if isinstance(value, PackageFile) else value
        executable = isinstance(value, PackageFile) and value.executable
        entries.append(
            {"path": path, "digest": digest(data), "size": len(data), "executable": executable}
        )
    return {"files": entries, **options}


def raw(value: bytes | PackageFile) -> bytes:
    return value.data if isinstance(value, PackageFile) else value


async def publish(
    served,
    slug: str,
    files,
    *,
    headers: dict[str, str] | None = None,
    role: str = "write",
    workspace: str = ACME.workspace,
):
    """PUT a multipart package; `headers` default to a create."""
    parts, data = form(files)
    return await served.client.put(
        f"/v1/workspaces/{workspace}/skills/{slug}",
        files=parts,
        data=data,
        headers={
            **(headers or {"If-None-Match": "*"}),
            **served.auth(role, other=workspace != ACME.workspace),
        },
    )
