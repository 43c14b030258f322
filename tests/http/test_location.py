"""`Location` comes from configuration, never from the request, and names any slug.

Every header that carries a name (`Location`, `Content-Disposition`) is ASCII on the
wire: a Unicode slug is percent-encoded, so a write that committed never answers 500.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import tarfile
from hashlib import sha256
from urllib.parse import quote, unquote, urljoin

import httpx
import hypothesis
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from pydantic import ValidationError

from registry.console import ROUTERS as CONSOLE_ROUTERS
from registry.domain.archive import read_archive
from registry.domain.model import PackageFile, check_slug
from registry.errors import InvalidName
from registry.http.accesslog import RedactQueryStrings
from registry.http.app import create_app
from registry.settings import Settings
from tests.corpus.archives import tar_of
from tests.http.helpers import form, publish
from tests.support.packages import package, skill_md
from tests.support.scopes import ACME


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


# ---------------------------------------------------------------- names in headers

UNICODE = "\u043e\u0442\u0447\u0451\u0442-pdf"  # отчёт-pdf: a valid slug, not Latin-1
LATIN_1 = "na\u00efve-z"  # naïve-z: Latin-1, so raw bytes would reach the wire


def _quoted(name: str) -> bytes:
    """A `SKILL.md` whose `name` is `name` as a YAML string (a slug of digits is no number)."""
    return skill_md(json.dumps(name, ensure_ascii=False))


@pytest.mark.parametrize("slug", [UNICODE, LATIN_1], ids=["cyrillic", "latin-1"])
async def test_a_location_naming_a_unicode_slug_is_percent_encoded(served, slug):
    r = await publish(served, slug, {"SKILL.md": _quoted(slug)})
    assert r.status_code == 201, r.text
    assert r.headers["location"] == f"/v1/workspaces/acme/skills/{quote(slug)}"
    assert r.headers.raw  # the header went out as ASCII
    assert all(value.isascii() for _, value in r.headers.raw)


async def test_a_listing_location_naming_a_unicode_id_is_percent_encoded(served):
    issued = await served.registry.tokens.create("catalog", "write", actor="test")
    archive = tar_of([("SKILL.md", _quoted(UNICODE))])
    r = await served.client.put(
        f"/v1/catalog/listings/{UNICODE}",
        content=archive,
        headers={
            "Content-Type": "application/gzip",
            "If-None-Match": "*",
            "Authorization": f"Bearer {issued.token}",
        },
    )
    assert r.status_code == 201, r.text
    assert r.headers["location"] == f"/v1/catalog/listings/{quote(UNICODE)}"


def _valid(slug: str) -> bool:
    try:
        check_slug(slug)
    except InvalidName:
        return False
    return True


# Letters and digits of every script (the registry's rules pick the valid ones), and
# hyphens between them; kept short so that a name never reads as a credential.
_SLUGS = st.text(
    st.characters(categories=("Ll", "Lo", "Nd"), codec="utf-8") | st.just("-"),
    min_size=1,
    max_size=16,
).filter(_valid)


def _round_trip(base_url: str, token: str) -> None:
    auth = {"Authorization": f"Bearer {token}"}
    index_url = f"{base_url}/discovery/acme/personal/.well-known/agent-skills/index.json"

    @hypothesis.settings(
        max_examples=25,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        # Each example is a few requests: no shrinking, a failure shows its slug as it is.
        phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
    )
    @hypothesis.example(UNICODE)
    @hypothesis.example(LATIN_1)
    @given(slug=_SLUGS)
    def round_trip(slug: str) -> None:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            files = {"SKILL.md": _quoted(slug), "references/notes.md": b"Notes.\n"}
            parts, data = form(files)
            # A repeated example re-sends the head's exact package: 200, unchanged.
            put = client.put(
                f"/v1/workspaces/acme/skills/{slug}",
                files=parts,
                data=data,
                headers={"If-None-Match": "*", **auth},
            )
            assert put.status_code in (200, 201), put.text
            location = put.headers["location"]
            assert location.isascii()
            assert unquote(location) == f"/v1/workspaces/acme/skills/{slug}"

            read = client.get(location, headers=auth)
            assert read.status_code == 200, read.text
            assert read.headers["etag"] == put.headers["etag"]

            archive = client.get(f"{location}/archive", headers=auth)
            assert archive.status_code == 200, archive.text
            assert archive.headers["content-disposition"].isascii()
            with tarfile.open(fileobj=io.BytesIO(archive.content), mode="r:gz") as tar:
                assert tar.extractfile(f"{slug}/SKILL.md").read() == files["SKILL.md"]

            # The zip of the version: the path names the slug and the skill's tag.
            tag = put.headers["etag"].strip('"')
            artifact = f"{quote(slug, safe='')}/{tag}.zip"
            zipped = client.get(urljoin(index_url, artifact))
            assert zipped.status_code == 200, zipped.text
            disposition = zipped.headers["content-disposition"]
            assert disposition.isascii()
            assert unquote(disposition.partition("filename*=UTF-8''")[2]) == f"{slug}-1.zip"
            assert read_archive(zipped.content).files == {
                path: PackageFile(data) for path, data in files.items()
            }

            # The index lists the slugs its clients accept: the ASCII Agent Skills names.
            index = client.get(index_url)
            assert index.status_code == 200, index.text
            entries = {e["name"]: e for e in index.json()["skills"]}
            if re.fullmatch(r"[a-z0-9-]+", slug):
                assert entries[slug]["url"] == artifact
                assert entries[slug]["digest"] == f"sha256:{sha256(zipped.content).hexdigest()}"
            else:
                assert slug not in entries

    round_trip()


async def test_valid_unicode_slugs_round_trip_through_every_name_bearing_response(serve):
    served = await serve(socket=True)  # a client in another thread
    await served.registry.discovery.update(ACME, actor="owner", everything=True, public=True)
    await asyncio.to_thread(_round_trip, served.url, served.tokens["write"])


# ---------------------------------------------------------------- redirects


def _toggled_paths(app) -> list[str]:
    """Every GET route's path with its parameters filled in and its trailing slash toggled.

    The API's routes from the OpenAPI document, the console's from its routers.
    """
    templates = [p for p, item in app.openapi()["paths"].items() if "get" in item]
    console = [route for router in CONSOLE_ROUTERS for route in router.routes]
    templates += [route.path for route in console if "GET" in route.methods]
    paths = set()
    for template in templates:
        path = re.sub(r"\{[^}]+\}", "x1", template)
        paths.add(path[:-1] if path.endswith("/") else f"{path}/")
    return sorted(p for p in paths if p)


async def test_no_redirect_is_built_from_the_host_header(served):
    app = create_app(served.registry)
    answers = {}
    for path in ["/console", *_toggled_paths(app)]:
        answer = await served.client.get(path, headers={"Host": "evil.example"})
        assert answer.status_code < 500, (path, answer.text)
        answers[path] = answer.headers.get("location")
    built_from_host = {p: where for p, where in answers.items() if where and "evil" in where}
    assert built_from_host == {}
    # The console's entrance without its slash still leads in, by a relative reference.
    assert answers["/console"] == "/console/signin"
