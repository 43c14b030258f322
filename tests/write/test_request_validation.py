"""The library's write API refuses malformed arguments before any work, on both databases.

A Python caller is outside the HTTP layer's schemas. An argument the type hints forbid
used to fail deep inside the locked transaction, after the write's blobs were uploaded (a
`None` actor, a lone surrogate), to be stored on
SQLite and refused by PostgreSQL (a NUL), or worse, to be taken: `expected_head="1"`
skipped the compare-and-swap and created the skill, `True` matched version 1, and a bare
`str` of sources became one source per character. Now each is `ArgumentInvalid` naming
the argument and the rule, and nothing is stored: no blob, no row (docs/write-path.md,
"Arguments").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from blobstore.local import LocalBlobStore
from registry import ANY, Origin
from registry.api import Registry
from registry.domain.numbers import MAX_VERSION
from registry.errors import ArgumentInvalid, HeadConflict, SkillNotFound
from tests.support.packages import package
from tests.support.scopes import ACME
from tests.support.state import WRITE_TABLES, db_state, store_digests

SLUG = "pdf-report"

Write = Callable[[], Awaitable[object]]


async def refused(registry: Registry, store: LocalBlobStore, write: Write) -> ArgumentInvalid:
    """Run `write`, expect `ArgumentInvalid`, and check that it stored nothing."""
    before = await db_state(registry, WRITE_TABLES)
    stored = await store_digests(store)
    with pytest.raises(ArgumentInvalid) as caught:
        await write()
    assert await db_state(registry, WRITE_TABLES) == before
    assert await store_digests(store) == stored
    return caught.value


async def first_version(registry: Registry) -> None:
    await registry.write_package(ACME, SLUG, package(SLUG), expected_head=None, actor="u")


# ---------------------------------------------------------------- expected_head


@pytest.mark.parametrize(
    ("expected", "rule"),
    [
        ("1", "wrong_type"),
        (1.0, "wrong_type"),
        (float("nan"), "wrong_type"),
        (object(), "wrong_type"),
        ("new", "wrong_type"),
        (True, "wrong_type"),
        (False, "wrong_type"),
        (-1, "out_of_range"),
        (MAX_VERSION + 1, "out_of_range"),
        (2**63, "out_of_range"),
        # More digits than `str()` of an int may have: the error must not format it.
        pytest.param(10**5000, "out_of_range", id="10**5000"),
    ],
    ids=repr,
)
async def test_an_expected_head_that_is_not_none_any_or_a_version_is_refused(
    registry: Registry, local_store: LocalBlobStore, expected: object, rule: str
) -> None:
    # Before: a wrong type skipped every check and created the skill.
    error = await refused(
        registry,
        local_store,
        lambda: registry.write_package(
            ACME,
            SLUG,
            package(SLUG),
            expected_head=expected,  # type: ignore[arg-type]
            actor="u",
        ),
    )
    assert (error.argument, error.rule) == ("expected_head", rule)
    assert error.details() == {"argument": "expected_head", "rule": rule, "detail": error.detail}
    with pytest.raises(SkillNotFound):
        await registry.package_info(ACME, SLUG)


async def test_true_does_not_match_version_one(
    registry: Registry, local_store: LocalBlobStore
) -> None:
    await first_version(registry)
    error = await refused(
        registry,
        local_store,
        lambda: registry.write_package(
            ACME, SLUG, package(SLUG, tag="2"), expected_head=True, actor="u"
        ),
    )
    assert (error.argument, error.rule) == ("expected_head", "wrong_type")
    assert (await registry.package_info(ACME, SLUG)).version == 1


async def test_zero_and_the_largest_version_are_expected_heads_no_skill_has(
    registry: Registry,
) -> None:
    # 0 is the HTTP layer's "already applied" (a retried write whose reply was lost): it
    # succeeds only by finding its package at the head.
    await first_version(registry)
    same = await registry.write_package(ACME, SLUG, package(SLUG), expected_head=0, actor="u")
    assert (same.version, same.unchanged) == (1, True)
    for expected in (0, MAX_VERSION):
        with pytest.raises(HeadConflict) as caught:
            await registry.write_package(
                ACME, SLUG, package(SLUG, tag="2"), expected_head=expected, actor="u"
            )
        assert (caught.value.expected, caught.value.current) == (expected, 1)


# ---------------------------------------------------------------- metadata


@pytest.mark.parametrize(
    ("options", "argument", "rule"),
    [
        ({"actor": None}, "actor", "wrong_type"),
        ({"actor": 5}, "actor", "wrong_type"),
        ({"message": None}, "message", "wrong_type"),
        ({"message": b"hi"}, "message", "wrong_type"),
        ({"sources": None}, "sources", "wrong_type"),
        ({"sources": [None]}, "sources/1", "wrong_type"),
        ({"sources": ["chat:1", 2]}, "sources/2", "wrong_type"),
        ({"sources": [b"chat:1"]}, "sources/1", "wrong_type"),
        ({"actor": "\udc80"}, "actor", "invalid_unicode"),
        ({"message": "fix \ud800"}, "message", "invalid_unicode"),
        ({"sources": ["chat:1", "\ud800"]}, "sources/2", "invalid_unicode"),
        ({"message": "a\x00b"}, "message", "nul_byte"),
        ({"actor": "a\x00"}, "actor", "nul_byte"),
        ({"sources": ["x\x00"]}, "sources/1", "nul_byte"),
        ({"origin": "edit"}, "origin", "wrong_type"),
        ({"keep_auto_improve": "no"}, "keep_auto_improve", "wrong_type"),
        ({"approve": "SKILL.md:1"}, "approve", "wrong_type"),
        ({"approve": [("SKILL.md", 1)]}, "approve/1", "wrong_type"),
    ],
    ids=lambda v: repr(v) if isinstance(v, dict) else "",
)
async def test_metadata_of_a_wrong_type_or_unstorable_text_is_refused_before_uploading(
    registry: Registry,
    local_store: LocalBlobStore,
    options: dict[str, Any],
    argument: str,
    rule: str,
) -> None:
    # Before: a StorageUnavailable from inside the locked transaction after the blobs were
    # uploaded (None, a surrogate; a NUL on PostgreSQL), a NUL stored on SQLite, or an
    # AttributeError.
    await first_version(registry)
    write: dict[str, Any] = {"expected_head": 1, "actor": "u", **options}
    error = await refused(
        registry,
        local_store,
        lambda: registry.write_package(ACME, SLUG, package(SLUG, tag="2"), **write),
    )
    assert (error.argument, error.rule) == (argument, rule)
    # The error names the argument and the rule, never the value.
    assert "\x00" not in str(error)
    assert "chat:1" not in str(error)


@pytest.mark.parametrize("sources", ["chat:42", b"chat:42", {"chat:42": 1}], ids=type)
async def test_sources_must_be_a_sequence_of_strings_not_one_string(
    registry: Registry, local_store: LocalBlobStore, sources: object
) -> None:
    # Before: "chat:42" was stored as the sources c, h, a, t, :, 4, 2.
    error = await refused(
        registry,
        local_store,
        lambda: registry.write_package(
            ACME,
            SLUG,
            package(SLUG),
            expected_head=None,
            actor="u",
            sources=sources,  # type: ignore[arg-type]
        ),
    )
    assert (error.argument, error.rule) == ("sources", "wrong_type")


async def test_ordinary_metadata_of_any_sequence_type_is_kept(registry: Registry) -> None:
    def generated() -> Iterator[str]:
        yield "chat:42"
        yield "ticket:ÉTÉ-7 ✓"

    pub = await registry.write_package(
        ACME,
        SLUG,
        package(SLUG),
        expected_head=ANY,
        origin=Origin.SAVE,
        actor="Zoë",
        message="Résumé: tabs\tand\nnewlines are fine 🙂",
        sources=generated(),  # type: ignore[arg-type]
    )
    assert pub.version == 1
    info = (await registry.history(ACME, SLUG)).items[0]
    assert (info.actor, info.sources) == ("Zoë", ["chat:42", "ticket:ÉTÉ-7 ✓"])


async def test_edit_restore_and_retry_check_their_metadata_too(
    registry: Registry, local_store: LocalBlobStore
) -> None:
    await first_version(registry)
    await registry.write_package(ACME, SLUG, package(SLUG, tag="2"), expected_head=1, actor="u")
    edit = await refused(
        registry,
        local_store,
        lambda: registry.edit(
            ACME,
            SLUG,
            package(SLUG, tag="3"),
            base_version=2,
            actor="u",
            sources="chat:42",  # a str is a Sequence[str] to the type checker
        ),
    )
    assert edit.argument == "sources"
    restore = await refused(
        registry,
        local_store,
        lambda: registry.restore(ACME, SLUG, 1, expected_head="2", actor="u"),  # type: ignore[arg-type]
    )
    assert restore.argument == "expected_head"
    retry = await refused(
        registry,
        local_store,
        lambda: registry.write_with_retry(
            ACME, SLUG, lambda _: package(SLUG, tag="3"), actor="u", message="a\x00"
        ),
    )
    assert (retry.argument, retry.rule) == ("message", "nul_byte")
