"""`Location` comes from configuration, never from the request (issue 15, item 8)."""

from __future__ import annotations

import logging

import pytest
from pydantic import ValidationError

from registry.http.accesslog import RedactQueryStrings
from registry.settings import Settings
from tests.http.helpers import publish
from tests.support.packages import package


async def test_location_is_a_relative_reference_whatever_the_host_header(served):
    r = await publish(
        served, "here", package("here"), headers={"If-None-Match": "*", "Host": "evil.example"}
    )
    assert r.status_code == 201, r.text
    assert r.headers["location"] == "/v1/workspaces/acme/skills/here"


async def test_location_is_under_the_public_base_url_when_one_is_set(serve):
    served = await serve(settings=Settings(public_base_url="https://skills.example.com/reg/"))
    r = await publish(
        served, "there", package("there"), headers={"If-None-Match": "*", "Host": "evil.example"}
    )
    assert r.status_code == 201, r.text
    assert r.headers["location"] == "https://skills.example.com/reg/v1/workspaces/acme/skills/there"


@pytest.mark.parametrize(
    "value", ["skills.example.com", "ftp://skills.example.com", "https://", "https://x/?a=1"]
)
def test_a_public_base_url_must_be_an_http_url_without_a_query(value):
    with pytest.raises(ValidationError):
        Settings(public_base_url=value)


def test_the_access_log_filter_redacts_query_strings():
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", "/v1/x?access_token=skr_secret&limit=2", "1.1", 200),
        None,
    )
    assert RedactQueryStrings().filter(record)
    assert record.getMessage() == '127.0.0.1:5000 - "GET /v1/x?[redacted] HTTP/1.1" 200'
