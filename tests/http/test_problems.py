"""The one table from registry exceptions to HTTP statuses, and its documentation."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest

from blobstore import BlobStoreError
from registry import errors
from registry.api import NotInitialized
from registry.http.problems import (
    HTTP_CODES,
    STATUS_BY_ERROR,
    HttpProblem,
    public_error,
    registry_problem,
    status_for,
)
from tests.http.helpers import SKILLS

DOC = (Path(__file__).resolve().parents[2] / "docs" / "http.md").read_text(encoding="utf-8")

EXPECTED_STATUS = {
    errors.RefusedInput: 422,
    errors.InvalidName: 400,
    errors.LimitExceeded: 413,
    errors.Conflict: 409,
    errors.HeadConflict: 412,
    errors.ProposalStale: 409,
    errors.NotFound: 404,
    errors.VersionRevoked: 410,
    errors.AccessDenied: 403,
    errors.Unauthenticated: 401,
    errors.WorkspaceBusy: 429,
    errors.StorageUnavailable: 503,
    errors.Inconsistency: 500,
}


def registry_errors() -> list[type[errors.RegistryError]]:
    found = [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, errors.RegistryError)
    ]
    return [*found, NotInitialized]


def expected(cls: type[BaseException]) -> int:
    for base in cls.__mro__:
        if base in EXPECTED_STATUS:
            return EXPECTED_STATUS[base]
    return 500


@pytest.mark.parametrize("cls", registry_errors(), ids=lambda c: c.__name__)
def test_every_registry_error_maps_to_its_documented_status(cls):
    instance = cls.__new__(cls)
    assert status_for(instance) == expected(cls)
    row = re.search(rf"^\| {status_for(instance)} \| (.*)$", DOC, re.MULTILINE)
    assert row is not None
    assert f"`{cls.code}`" in row.group(1), f"{cls.code} is not in the {status_for(instance)} row"


def test_every_http_code_is_documented_with_its_status():
    for code, (status, _) in HTTP_CODES.items():
        rows = re.findall(rf"^\| {status} \| (.*)$", DOC, re.MULTILINE)
        assert any(f"`{code}`" in row for row in rows), code
        assert HttpProblem(code, "x").status_code == status


def test_blob_store_errors_that_escape_are_503():
    assert status_for(BlobStoreError("x")) == 503
    assert STATUS_BY_ERROR[-1] == (BlobStoreError, 503)


def test_subclasses_come_before_their_bases_in_the_table():
    classes = [cls for cls, _ in STATUS_BY_ERROR]
    for i, cls in enumerate(classes):
        for later in classes[i + 1 :]:
            assert not issubclass(later, cls) or later is cls, (cls, later)


@pytest.mark.parametrize(
    ("error", "what"),
    [
        (
            errors.StorageUnavailable(
                "database", "postgresql+psycopg://skillreg:pw@db.internal:5432/registry refused"
            ),
            "database",
        ),
        (
            errors.StorageUnavailable(
                "blob store", "put ab/cd in /var/lib/skillreg/blobs: [Errno 28] No space left"
            ),
            "blob store",
        ),
        (BlobStoreError("s3://bucket/prefix at http://10.0.0.7:9000: timed out"), "blob store"),
        (errors.Inconsistency("blob /var/lib/skillreg/blobs/ab/cd is corrupted"), None),
    ],
    ids=["database", "blob-store", "blob-store-raw", "inconsistency"],
)
def test_a_server_error_says_which_store_and_a_correlation_id_and_logs_the_cause(
    error, what, caplog
):
    """Issue 15, item 3: the cause (paths, errno, bucket, endpoint, URL) goes to the log only."""
    response = registry_problem(error)
    body = json.loads(response.body)
    reference = body["details"]["correlation_id"]
    assert re.fullmatch(r"[0-9a-f]{16}", reference)
    expected = {"correlation_id": reference} | ({} if what is None else {"what": what})
    assert body["details"] == expected
    assert reference in body["detail"]
    cause = str(error).split(": ", 1)[-1]
    for secret in ("/var/lib", "Errno", "db.internal", "pw@", "10.0.0.7", "bucket"):
        assert secret not in response.body.decode(), secret
    logged = [r for r in caplog.records if reference in r.getMessage()]
    assert len(logged) == 1
    assert cause in logged[0].getMessage()


def test_a_jobs_server_side_error_is_shown_without_its_cause():
    """A job's `last_error` is served to clients: the same rule as a 5xx body."""
    failed = errors.StorageUnavailable("blob store", "put ab/cd in /var/lib/skillreg/blobs: EIO")
    record = {
        "code": failed.code,
        "message": str(failed),
        "details": failed.details(),
        "attempt": 2,
        "at": "2026-01-01T00:00:00+00:00",
        "permanent": False,
    }
    shown = public_error(record)
    assert shown is not None
    assert "/var/lib" not in json.dumps(shown)
    assert shown["details"] == {"what": "blob store"}
    assert (shown["code"], shown["attempt"], shown["permanent"]) == (
        "storage_unavailable",
        2,
        False,
    )
    conflict = {**record, "code": "ownership_conflict", "message": "skill 'x' is owner-saved"}
    assert public_error(conflict) == conflict
    assert public_error(None) is None


@pytest.mark.parametrize(
    "slug", ["Not_A-Slug", "cafe\u0301-notes", "x--y"], ids=["case", "nfkc", "hyphens"]
)
async def test_a_refused_name_is_named_by_its_rule_never_echoed(served, slug):
    answer = await served.client.get(f"{SKILLS}/{slug}", headers=served.auth("read"))
    body = answer.json()
    assert (answer.status_code, body["code"]) == (400, "invalid_name")
    assert body["detail"].startswith("invalid slug: ")
    assert body["details"].keys() == {"kind", "rule"}
    for echoed in ("Not_A", "caf", "x--y"):
        assert echoed not in answer.text


_TARGET = "/v1/workspaces/acme/targets/0b9f7e4c-5a1d-4c2e-9f3a-6d8e1b2c3a4f"
_NEW_STATE = {"manifest_hash": "0" * 64, "outcome": "applied", "error": None}
# Every request body field that holds a number, the role it needs and the body around it.
NUMBER_FIELDS = {
    "restore": ("POST", f"{SKILLS}/x/restore", "owner", lambda n: {"version": n}),
    "load": ("POST", f"{SKILLS}/x/loads", "write", lambda n: {"version": n, "conversation": "c"}),
    "install": (
        "POST",
        "/v1/workspaces/acme/installs",
        "write",
        lambda n: {"listing": "x", "version": n},
    ),
    "update": ("POST", f"{SKILLS}/x/update", "write", lambda n: {"version": n}),
    "decision": (
        "POST",
        "/v1/workspaces/acme/decisions",
        "owner",
        lambda n: {"decisions": [{"proposal": n, "decision": "apply"}]},
    ),
    "manifest-size": (
        "PUT",
        f"{SKILLS}/x",
        "write",
        lambda n: {"files": [{"path": "SKILL.md", "digest": "0" * 64, "size": n}]},
    ),
    "approval-ordinal": (
        "PUT",
        f"{SKILLS}/x",
        "owner",
        lambda n: {"files": [], "approve": [{"path": "SKILL.md", "ordinal": n}]},
    ),
    "record-version": (
        "PUT",
        f"{_TARGET}/skills/x",
        "read",
        lambda n: {"expected": None, "record": {**_NEW_STATE, "version": n}, "action": "written"},
    ),
}


@pytest.mark.parametrize("number", [True, 1.0], ids=["true", "float"])
@pytest.mark.parametrize("name", NUMBER_FIELDS)
async def test_a_number_in_a_json_body_is_a_json_integer(served, name, number):
    method, path, role, body = NUMBER_FIELDS[name]
    # A restore needs `If-Match`, a publish `If-None-Match`, before its body is read.
    headers = {"If-None-Match": "*"} if path == f"{SKILLS}/x" else {"If-Match": "*"}
    answer = await served.client.request(
        method, path, json=body(number), headers={**headers, **served.auth(role)}
    )
    assert (answer.status_code, answer.json()["code"]) == (422, "request_invalid"), answer.text
