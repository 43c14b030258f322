"""A write's metadata gets the content check its files get (issue 15, item 5), both databases.

A version's message and sources are stored with it and handed back by its history, so a
credential in them is refused like one in a file: `ContentBlocked` naming the field
(`meta:message`, `meta:sources/N`), never the value, and nothing is stored.
"""

from __future__ import annotations

import pytest

from registry.errors import ContentBlocked
from tests.corpus import fakes
from tests.support.packages import package
from tests.support.scopes import ACME
from tests.support.state import WRITE_TABLES, db_state, store_digests

SLUG = "pdf-report"


@pytest.mark.parametrize(
    ("options", "path", "pattern_class"),
    [
        ({"message": f"deployed with {fakes.GITHUB_TOKEN}"}, "meta:message", "github_token"),
        (
            {"sources": ["chat:42", f"aws {fakes.AWS_ACCESS_KEY_ID}"]},
            "meta:sources/2",
            "aws_access_key_id",
        ),
        ({"message": f"key:\n{fakes.RSA_PRIVATE_KEY}"}, "meta:message", "private_key"),
    ],
    ids=["message", "source", "private-key"],
)
async def test_a_credential_in_metadata_is_refused_and_nothing_is_stored(
    registry, local_store, options, path, pattern_class
):
    await registry.write_package(ACME, SLUG, package(SLUG), expected_head=None, actor="u")
    before = await db_state(registry, WRITE_TABLES)
    stored = await store_digests(local_store)
    with pytest.raises(ContentBlocked) as caught:
        await registry.write_package(
            ACME, SLUG, package(SLUG, tag="2"), expected_head=1, actor="u", **options
        )
    assert (caught.value.path, caught.value.pattern_class) == (path, pattern_class)
    assert await db_state(registry, WRITE_TABLES) == before
    assert await store_digests(local_store) == stored
    for secret in (fakes.GITHUB_TOKEN, fakes.AWS_ACCESS_KEY_ID, fakes.RSA_PRIVATE_KEY[40:80]):
        assert secret not in f"{caught.value} {caught.value.details()}"


async def test_a_restore_whose_message_holds_a_credential_is_refused(registry):
    await registry.write_package(ACME, SLUG, package(SLUG), expected_head=None, actor="u")
    await registry.write_package(ACME, SLUG, package(SLUG, tag="2"), expected_head=1, actor="u")
    before = await db_state(registry, WRITE_TABLES)
    with pytest.raises(ContentBlocked) as caught:
        await registry.restore(
            ACME, SLUG, 1, expected_head=2, actor="u", message=f"back: {fakes.STRIPE_KEY}"
        )
    assert caught.value.path == "meta:message"
    assert await db_state(registry, WRITE_TABLES) == before


async def test_ordinary_metadata_passes_and_is_kept(registry):
    pub = await registry.write_package(
        ACME,
        SLUG,
        package(SLUG),
        expected_head=None,
        actor="token:0d97c5e63bd67fa0",  # an HTTP token's id: the actor is not scanned here
        message="Tighten the summary; the token: field is documented in references/api.md",
        sources=["chat:42", "ticket:OPS-1234", "https://example.com/runbook#auth"],
    )
    assert pub.version == 1
    page = await registry.history(ACME, SLUG)
    assert page.items[0].sources == [
        "chat:42",
        "ticket:OPS-1234",
        "https://example.com/runbook#auth",
    ]
