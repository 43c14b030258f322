"""The one table from registry exceptions to HTTP statuses, and its documentation."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from blobstore import BlobStoreError
from registry import errors
from registry.api import NotInitialized
from registry.http.problems import HTTP_CODES, STATUS_BY_ERROR, HttpProblem, status_for

DOC = (Path(__file__).resolve().parents[2] / "docs" / "http.md").read_text(encoding="utf-8")

EXPECTED_STATUS = {
    errors.RefusedInput: 422,
    errors.InvalidName: 400,
    errors.LimitExceeded: 413,
    errors.Conflict: 409,
    errors.HeadConflict: 412,
    errors.ProposalStale: 409,
    errors.NotFound: 404,
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
