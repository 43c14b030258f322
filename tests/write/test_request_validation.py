"""The library's write API refuses malformed arguments before any work, on both databases.

A Python caller is outside the HTTP layer's schemas. An argument the type hints forbid
used to fail deep inside the locked transaction, after the write's blobs were uploaded (a
`None` actor, a lone surrogate, an `executable` that is not a bool), to be stored on
SQLite and refused by PostgreSQL (a NUL), or worse, to be taken: `expected_head="1"`
skipped the compare-and-swap and created the skill, `True` matched version 1, and a bare
`str` of sources became one source per character. Now each is `ArgumentInvalid` naming
the argument and the rule, and nothing is stored: no blob, no row (docs/write-path.md,
"Arguments"). A `PackageFile` keeps its data as immutable `bytes` (a buffer is copied, a
`bytes` is not), and the file limit counts the files a mapping holds, not what its
`len()` says. A version or an id that no column holds (2**31 on PostgreSQL, 2**63 on
SQLite) is the thing's not-found error, no longer a driver error (docs/write-path.md,
"Reads").

Each table of bad arguments runs in one test, on one registry: every case is refused and
stores nothing, so the next case starts from the same state; a failure names its case.
An argument refused before the database is reached (a wrong type, unstorable text) is a
property outside the database (`one_database`): had the check gone, SQLite would store
the value or fail in its driver, and the test would fail there. What reaches a column
(numbers no column holds, text stored and read back, head comparisons) runs on both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import pytest

from blobstore.local import LocalBlobStore
from registry import ANY, FindingRef, Origin, PackageFile, ProposalRef, wire
from registry.api import Registry
from registry.domain.numbers import MAX_VERSION
from registry.errors import (
    ArgumentInvalid,
    DraftKept,
    HeadConflict,
    JobNotFound,
    LimitExceeded,
    ListingNotFound,
    NotFound,
    PendingWriteNotFound,
    ProposalNotFound,
    SkillNotFound,
    SuppressionNotFound,
    VersionNotFound,
)
from registry.services.history.decisions import DecisionRequest
from registry.services.write.request import WriteRequest
from tests.support.cases import naming
from tests.support.packages import package, skill_md
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


BAD_EXPECTED_HEADS: list[tuple[str, object, str]] = [
    ("'1'", "1", "wrong_type"),
    ("1.0", 1.0, "wrong_type"),
    ("nan", float("nan"), "wrong_type"),
    ("object()", object(), "wrong_type"),
    ("'new'", "new", "wrong_type"),
    ("True", True, "wrong_type"),
    ("False", False, "wrong_type"),
    ("-1", -1, "out_of_range"),
    ("MAX_VERSION + 1", MAX_VERSION + 1, "out_of_range"),
    ("2**63", 2**63, "out_of_range"),
    # More digits than `str()` of an int may have: the error must not format it.
    ("10**5000", 10**5000, "out_of_range"),
]


@pytest.mark.one_database
async def test_an_expected_head_that_is_not_none_any_or_a_version_is_refused(
    registry: Registry, local_store: LocalBlobStore
) -> None:
    # Before: a wrong type skipped every check and created the skill.
    for case, expected, rule in BAD_EXPECTED_HEADS:
        with naming(case):
            error = await refused(
                registry,
                local_store,
                lambda expected=expected: registry.write_package(
                    ACME,
                    SLUG,
                    package(SLUG),
                    expected_head=expected,  # type: ignore[arg-type]
                    actor="u",
                ),
            )
            assert (error.argument, error.rule) == ("expected_head", rule)
            assert error.details() == {
                "argument": "expected_head",
                "rule": rule,
                "detail": error.detail,
            }
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


BAD_METADATA: list[tuple[dict[str, Any], str, str]] = [
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
    ({"message": "fix \x1b[2J"}, "message", "control_character"),
    ({"message": "fix \x9b2J"}, "message", "control_character"),
    ({"actor": "u\u202e"}, "actor", "bidi_control"),
    ({"sources": ["chat\n1"]}, "sources/1", "control_character"),
    ({"origin": "edit"}, "origin", "wrong_type"),
    ({"keep_auto_improve": "no"}, "keep_auto_improve", "wrong_type"),
    ({"approve": "SKILL.md:1"}, "approve", "wrong_type"),
    ({"approve": [("SKILL.md", 1)]}, "approve/1", "wrong_type"),
]


@pytest.mark.one_database
async def test_metadata_of_a_wrong_type_or_unstorable_text_is_refused_before_uploading(
    registry: Registry, local_store: LocalBlobStore
) -> None:
    # Before: a StorageUnavailable from inside the locked transaction after the blobs were
    # uploaded (None, a surrogate; a NUL on PostgreSQL), a NUL stored on SQLite, or an
    # AttributeError.
    await first_version(registry)
    for options, argument, rule in BAD_METADATA:
        with naming(options):
            write: dict[str, Any] = {"expected_head": 1, "actor": "u", **options}
            error = await refused(
                registry,
                local_store,
                lambda write=write: registry.write_package(
                    ACME, SLUG, package(SLUG, tag="2"), **write
                ),
            )
            assert (error.argument, error.rule) == (argument, rule)
            # The error names the argument and the rule, never the value.
            assert "\x00" not in str(error)
            assert "chat:1" not in str(error)


@pytest.mark.one_database
async def test_sources_must_be_a_sequence_of_strings_not_one_string(
    registry: Registry, local_store: LocalBlobStore
) -> None:
    # Before: "chat:42" was stored as the sources c, h, a, t, :, 4, 2.
    for sources in ("chat:42", b"chat:42", {"chat:42": 1}):
        with naming(sources):
            error = await refused(
                registry,
                local_store,
                lambda sources=sources: registry.write_package(
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


# ---------------------------------------------------------------- every text a client sets

TARGET = "0b1e2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
# What the attack run stored: a read token's error that clears the screen and plants a
# hyperlink, a path that reads backwards; NUL answered 503 on PostgreSQL.
OSC8 = "\x1b]8;;https://example.invalid\x07click\x1b]8;;\x07"
TEXT_TABLES = (
    "skills",
    "events",
    "api_tokens",
    "materialization_targets",
    "materializations",
    "source_exclusions",
)


def _place(path: str = "/srv/skills", host: str = "agent-1") -> wire.TargetRegistration:
    # A library caller's model, not validated by pydantic: the service checks it itself.
    return wire.TargetRegistration.model_construct(
        agent="personal", path=path, host=host, mode="link"
    )


def _failed(error: str) -> wire.RecordRequest:
    record = wire.NewState.model_construct(
        manifest_hash=None, version=None, outcome="failed", error=error
    )
    return wire.RecordRequest.model_construct(
        expected=None, record=record, action="failed", drift=[], error_code=None
    )


TEXT_CALLS: dict[str, tuple[Callable[[Registry], Awaitable[object]], str, str]] = {
    "control reason": (
        lambda r: r.pause_learning(ACME, SLUG, actor="u", reason="why \x1b[2J"),
        "reason",
        "control_character",
    ),
    "control reason NUL": (
        lambda r: r.stop_using(ACME, SLUG, actor="u", reason="a\x00"),
        "reason",
        "nul_byte",
    ),
    "control actor": (
        lambda r: r.pause_learning(ACME, SLUG, actor="owner\u202e"),
        "actor",
        "bidi_control",
    ),
    "excluded source": (
        lambda r: r.exclude_source(ACME, "chat:\u20661", actor="u"),
        "source",
        "bidi_control",
    ),
    "token name": (
        lambda r: r.tokens.create(ACME.workspace, "read", name=OSC8, actor="u"),
        "name",
        "control_character",
    ),
    "target path": (
        lambda r: r.targets.register(ACME.workspace, TARGET, _place(path="/srv/\u202eexe.txt")),
        "path",
        "bidi_control",
    ),
    "target host": (
        lambda r: r.targets.register(ACME.workspace, TARGET, _place(host="agent\x85")),
        "host",
        "control_character",
    ),
    "record error": (
        lambda r: r.targets.record(ACME.workspace, TARGET, SLUG, _failed(f"failed: {OSC8}")),
        "error",
        "control_character",
    ),
    "record error NUL": (
        lambda r: r.targets.record(ACME.workspace, TARGET, SLUG, _failed("a\x00")),
        "error",
        "nul_byte",
    ),
    "page cursor": (lambda r: r.list_skills(ACME, after="a\x00"), "after", "nul_byte"),
    "catalog cursor": (
        lambda r: r.marketplace.list_listings(after="\x1b"),
        "after",
        "control_character",
    ),
}


async def test_text_a_client_sets_follows_one_rule_everywhere(registry: Registry) -> None:
    # Before: each was stored as sent on SQLite (and shown raw by `skillreg status`), the
    # NULs answered StorageUnavailable (503) on PostgreSQL. Both databases: the text that
    # passes is stored and read back.
    await first_version(registry)
    await registry.targets.register(ACME.workspace, TARGET, _place(path="/srv/old"))
    before = await db_state(registry, TEXT_TABLES)
    for case, (call, argument, rule) in TEXT_CALLS.items():
        with naming(case):
            with pytest.raises(ArgumentInvalid) as caught:
                await call(registry)
            assert (caught.value.argument, caught.value.rule) == (argument, rule)
            assert await db_state(registry, TEXT_TABLES) == before
    # Multi-line text keeps its line breaks and tabs.
    await registry.pause_learning(ACME, SLUG, actor="u", reason="first line\n\tsecond")
    assert (await registry.skill_status(ACME, SLUG)).pause_reason == "first line\n\tsecond"


# ---------------------------------------------------------------- files


@pytest.mark.parametrize("executable", ["yes", "", None, 1, 0])
def test_a_package_file_is_executable_or_not(executable: object) -> None:
    # Before: accepted here, then a StorageUnavailable (or a wrong mode) inside the write.
    with pytest.raises(ArgumentInvalid) as caught:
        PackageFile(b"echo", executable=executable)  # type: ignore[arg-type]
    assert (caught.value.argument, caught.value.rule) == ("PackageFile.executable", "wrong_type")


@pytest.mark.parametrize("data", ["text", None, 12, [1, 2]], ids=repr)
def test_package_file_data_must_be_bytes_like(data: object) -> None:
    with pytest.raises(ArgumentInvalid) as caught:
        PackageFile(data)  # type: ignore[arg-type]
    assert (caught.value.argument, caught.value.rule) == ("PackageFile.data", "wrong_type")


def test_package_file_data_becomes_immutable_bytes_and_plain_bytes_are_not_copied() -> None:
    data = b"#!/bin/sh\necho hi\n"
    assert PackageFile(data).data is data
    view = PackageFile(memoryview(b"viewed"))  # type: ignore[arg-type]
    assert (type(view.data), view.data) == (bytes, b"viewed")
    buffer = bytearray(b"before")
    copied = PackageFile(buffer)  # type: ignore[arg-type]
    buffer[:] = b"after!"  # the caller mutates its buffer after the file was made
    assert (type(copied.data), copied.data) == (bytes, b"before")


async def test_buffers_are_written_and_read_back_as_bytes(registry: Registry) -> None:
    files: dict[str, Any] = {
        "SKILL.md": bytearray(skill_md(SLUG)),
        "a.txt": memoryview(b"from a view"),
        "run.sh": PackageFile(memoryview(b"echo"), executable=True),  # type: ignore[arg-type]
    }
    await registry.write_package(ACME, SLUG, files, expected_head=None, actor="u")
    back = (await registry.read_package(ACME, SLUG)).files
    assert back["a.txt"] == PackageFile(b"from a view")
    assert back["run.sh"] == PackageFile(b"echo", executable=True)


BAD_FILES: dict[str, tuple[object, str]] = {
    "none": (None, "files"),
    "pairs": ([("SKILL.md", b"x")], "files"),
    "str-data": ({"SKILL.md": skill_md(SLUG), "a.txt": "text"}, "files['a.txt']"),
    "none-data": ({"SKILL.md": skill_md(SLUG), "a.txt": None}, "files['a.txt']"),
    "int-path": ({"SKILL.md": skill_md(SLUG), 5: b"x"}, "files"),
    "bytes-path": ({"SKILL.md": skill_md(SLUG), b"a.txt": b"x"}, "files"),
}


@pytest.mark.one_database
async def test_files_of_a_wrong_type_are_refused(
    registry: Registry, local_store: LocalBlobStore
) -> None:
    for case, (files, argument) in BAD_FILES.items():
        with naming(case):
            error = await refused(
                registry,
                local_store,
                lambda files=files: registry.write_package(
                    ACME,
                    SLUG,
                    files,  # type: ignore[arg-type]
                    expected_head=None,
                    actor="u",
                ),
            )
            assert (error.argument, error.rule) == (argument, "wrong_type")


class ShortDict(dict[str, Any]):
    """A dict that claims to hold one file, whatever it holds."""

    def __len__(self) -> int:
        return 1


class ShortMapping(Mapping[str, Any]):
    """A mapping that claims to hold one file, whatever it holds."""

    def __init__(self, files: dict[str, Any]) -> None:
        self._files = files

    def __getitem__(self, path: str) -> Any:
        return self._files[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return 1


@pytest.mark.one_database
async def test_the_file_limit_counts_the_files_not_what_len_says(
    registry: Registry, local_store: LocalBlobStore
) -> None:
    files = {f"references/{i:03d}.md": b"x" for i in range(150)} | {"SKILL.md": skill_md(SLUG)}
    before = await db_state(registry, WRITE_TABLES)
    kinds: list[Callable[[dict[str, Any]], Any]] = [ShortDict, ShortMapping]
    for kind in kinds:
        with naming(kind), pytest.raises(LimitExceeded) as caught:
            await registry.write_package(ACME, SLUG, kind(files), expected_head=None, actor="u")
        limit = (caught.value.rule, caught.value.limit, caught.value.actual)
        assert limit == ("max_files", 100, 151), kind
        assert await db_state(registry, WRITE_TABLES) == before, kind
        assert await store_digests(local_store) == set(), kind


# ---------------------------------------------------------------- numbers no column holds

# A version column is 32-bit (PostgreSQL's integer) and an id column 64-bit: above, the
# driver refuses the number (PostgreSQL: StorageUnavailable; SQLite: OverflowError at 2**63).
HUGE = [MAX_VERSION + 1, 2**63, 2**64, -(2**64)]

Read = Callable[[Registry, int], Awaitable[object]]

NUMBERED_READS: list[tuple[str, Read, type[NotFound]]] = [
    ("read_package", lambda r, n: r.read_package(ACME, SLUG, n), VersionNotFound),
    ("package_info", lambda r, n: r.package_info(ACME, SLUG, n), VersionNotFound),
    (
        "restore",
        lambda r, n: r.restore(ACME, SLUG, n, expected_head=ANY, actor="u"),
        VersionNotFound,
    ),
    ("record_load", lambda r, n: r.record_load(ACME, SLUG, n, "conversation-1"), VersionNotFound),
    ("diff", lambda r, n: r.diff(ACME, SLUG, n, 1), VersionNotFound),
    (
        "approve_findings",
        lambda r, n: r.approve_findings(ACME, SLUG, n, [FindingRef("SKILL.md", 1)], actor="u"),
        VersionNotFound,
    ),
    (
        "edit",
        lambda r, n: r.edit(ACME, SLUG, package(SLUG, tag="e"), base_version=n, actor="u"),
        VersionNotFound,
    ),
    ("diff-proposal", lambda r, n: r.diff(ACME, SLUG, ProposalRef(n), 1), ProposalNotFound),
    ("proposal", lambda r, n: r.proposal(ACME, n), ProposalNotFound),
    ("read_proposal", lambda r, n: r.read_proposal(ACME, n), ProposalNotFound),
    ("decide", lambda r, n: r.decide(ACME, n, "apply", actor="u"), ProposalNotFound),
    (
        "drop_pending_write",
        lambda r, n: r.learning.drop_pending_write(ACME.workspace, n, actor="u"),
        PendingWriteNotFound,
    ),
    (
        "lift_suppression",
        lambda r, n: r.learning.lift_suppression(ACME.workspace, n, actor="u"),
        SuppressionNotFound,
    ),
    ("listing", lambda r, n: r.marketplace.listing("lst", n), ListingNotFound),
    ("read_listing", lambda r, n: r.marketplace.read_listing("lst", n), ListingNotFound),
    (
        "enqueue_install",
        lambda r, n: r.marketplace.enqueue_install(ACME, "lst", n),
        ListingNotFound,
    ),
    ("job", lambda r, n: r.marketplace.job(n), JobNotFound),
    ("discovery-archive", lambda r, n: r.discovery.archive(ACME, SLUG, n), VersionNotFound),
    (
        "discovery-file",
        lambda r, n: r.discovery.file(ACME, SLUG, n, "SKILL.md"),
        VersionNotFound,
    ),
]


async def numbered_things(registry: Registry) -> None:
    """A skill at version 1, a listing, a published scope: what the numbered reads name."""
    await first_version(registry)
    await registry.marketplace.publish_listing("lst", package("lst"), actor="u")
    await registry.discovery.update(ACME, actor="u", everything=True)


async def test_a_number_no_column_holds_names_nothing_and_a_wrong_type_is_refused(
    registry: Registry,
) -> None:
    # Before: OverflowError (SQLite, from 2**63) or StorageUnavailable (PostgreSQL, from
    # 2**31: "integer out of range") instead of the thing's not-found error; True read
    # version 1 and "1" too on SQLite; 1.0 was taken as 1.
    await numbered_things(registry)
    before = await db_state(registry, WRITE_TABLES)
    for case, call, error in NUMBERED_READS:
        for number in HUGE:
            with naming(f"{case}({number})"), pytest.raises(error):
                await call(registry, number)
        for wrong in (True, "1", 1.0):
            with naming(f"{case}({wrong!r})"), pytest.raises(ArgumentInvalid) as caught:
                await call(registry, wrong)  # type: ignore[arg-type]
            assert caught.value.rule == "wrong_type", (case, wrong)
        assert await db_state(registry, WRITE_TABLES) == before, case


async def test_decisions_in_a_batch_name_a_proposal_no_column_holds_as_not_found(
    registry: Registry,
) -> None:
    await first_version(registry)
    outcomes = await registry.learning.decide_many(
        ACME.workspace, [DecisionRequest(2**64, "apply")], actor="u"
    )
    assert outcomes[0].error is not None
    assert outcomes[0].error["code"] == "proposal_not_found"


async def test_a_page_before_a_number_no_column_holds_is_the_first_page(
    registry: Registry,
) -> None:
    # Before: OverflowError or StorageUnavailable for the proposals', decisions' and jobs'
    # `before`; a history cursor with a number too large for its column likewise.
    await first_version(registry)
    await registry.write_package(ACME, SLUG, package(SLUG, tag="2"), expected_head=1, actor="u")
    with pytest.raises(DraftKept) as kept:
        await registry.edit(
            ACME, SLUG, package(SLUG, tag="d"), base_version=1, actor="u", keep_draft=True
        )
    proposal = kept.value.proposal
    await registry.marketplace.publish_listing("lst", package("lst"), actor="u")
    job = (await registry.marketplace.enqueue_install(ACME, "lst")).job.id
    for huge in (2**63, 2**70):
        page = await registry.list_proposals(ACME, pending_only=False, before=huge)
        assert [p.id for p in page.items] == [proposal]
        assert [p.id for p in (await registry.learning.decisions("acme", before=huge)).items] == [
            proposal
        ]
        assert [j.id for j in (await registry.marketplace.list_jobs(before=huge)).items] == [job]
    assert (await registry.list_proposals(ACME, pending_only=False, before=-(2**70))).items == []
    for cursor in ("1.99999999999", "99999999999999999999.1", "1.²", "junk", ""):
        with pytest.raises(ArgumentInvalid) as caught:
            await registry.history(ACME, SLUG, before=cursor)
        assert (caught.value.argument, caught.value.rule) == ("before", "malformed")
    for wrong in (True, "5", 5.0):
        with pytest.raises(ArgumentInvalid) as caught:
            await registry.list_proposals(ACME, before=wrong)  # type: ignore[arg-type]
        assert (caught.value.argument, caught.value.rule) == ("before", "wrong_type")
    with pytest.raises(ArgumentInvalid):
        await registry.history(ACME, SLUG, before=5)  # type: ignore[arg-type]


# ---------------------------------------------------------------- expected_skill


@pytest.mark.parametrize(
    ("skill", "head", "rule"),
    [
        ("1", 1, "wrong_type"),
        (1.0, 1, "wrong_type"),
        (True, 1, "wrong_type"),
        (0, 1, "out_of_range"),
        (-1, 1, "out_of_range"),
        (2**63, 1, "out_of_range"),
        pytest.param(10**5000, 1, "out_of_range", id="10**5000"),
        # A skill's identity goes with the head it names.
        (1, None, "wrong_type"),
        (1, ANY, "wrong_type"),
    ],
    ids=repr,
)
def test_an_expected_skill_that_is_not_a_skill_id_with_its_head_is_refused(
    skill: object, head: Any, rule: str
) -> None:
    with pytest.raises(ArgumentInvalid) as raised:
        WriteRequest(ACME, SLUG, head, Origin.EDIT, "u", expected_skill=skill)  # type: ignore[arg-type]
    assert (raised.value.argument, raised.value.rule) == ("expected_skill", rule)


def test_an_expected_skill_is_optional() -> None:
    assert WriteRequest(ACME, SLUG, 1, Origin.EDIT, "u").expected_skill is None
    assert WriteRequest(ACME, SLUG, 1, Origin.EDIT, "u", expected_skill=7).expected_skill == 7
