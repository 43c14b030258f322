"""The write path's contract, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from registry import ANY, Origin, PackageFile, Scope
from registry.db.tables import Event, VersionSource
from registry.errors import (
    CapacityExceeded,
    HeadConflict,
    OwnershipConflict,
    QuotaExceeded,
    SkillExists,
    SkillNotFound,
    SlugLookAlike,
    VersionNotFound,
)
from registry.services.write.publish import write_package
from registry.services.write.request import WriteRequest
from registry.settings import Settings
from tests.support.faults import InstrumentedStore
from tests.support.packages import as_bytes, package, publish, skill_md
from tests.support.roundtrips import RoundTrips
from tests.support.scopes import ACME
from tests.support.state import blob_rows, db_state, live_claims, store_digests
from tests.support.wire import WireTrace


async def test_create_then_read_back_byte_for_byte(registry):
    files = package("pdf-report", files=5)
    pub = await publish(registry, files=files, sources=["chat:42"], message="first")
    assert (pub.version, pub.created, pub.unchanged, pub.retired) == (1, True, False, None)
    assert pub.uploaded == 6
    package_read = await registry.read_package(ACME, "pdf-report")
    assert as_bytes(package_read.files) == as_bytes(files)
    assert package_read.files["scripts/run.py"].executable
    assert package_read.manifest.hash == pub.manifest_hash
    assert package_read.message == "first"


async def test_update_appends_a_version_and_pinned_reads_work(registry):
    first = package("pdf-report", tag="one")
    second = package("pdf-report", tag="two")
    await publish(registry, files=first)
    pub = await publish(registry, files=second, expected=1)
    assert (pub.version, pub.retired, pub.created) == (2, 1, True)
    assert as_bytes((await registry.read_package(ACME, "pdf-report", 1)).files) == as_bytes(first)
    assert as_bytes((await registry.read_package(ACME, "pdf-report")).files) == as_bytes(second)
    with pytest.raises(VersionNotFound):
        await registry.read_package(ACME, "pdf-report", 3)


async def test_resaving_the_head_uploads_nothing_and_creates_no_version(make_registry, local_store):
    store = InstrumentedStore(local_store)
    registry = await make_registry(blobs=store)
    files = package("pdf-report")
    first = await publish(registry, files=files)
    puts = store.calls["put"]
    before = await db_state(registry)
    again = await publish(registry, files=files, expected=ANY)
    assert (again.version, again.created, again.unchanged) == (1, False, True)
    assert again.manifest_hash == first.manifest_hash
    assert store.calls["put"] == puts
    assert await db_state(registry) == before


async def test_retry_of_a_create_is_idempotent(registry):
    files = package("pdf-report")
    await publish(registry, files=files, expected=None)
    again = await publish(registry, files=files, expected=None)
    assert again.unchanged
    assert again.version == 1


async def test_update_one_file_uploads_one_blob(make_registry, local_store):
    store = InstrumentedStore(local_store)
    registry = await make_registry(blobs=store)
    files = package("pdf-report", files=20)
    await publish(registry, files=files)
    files["references/part-005.md"] = b"changed"
    puts = store.calls["put"]
    pub = await publish(registry, files=files, expected=1)
    assert store.calls["put"] - puts == 1
    assert pub.uploaded == 1


async def test_mode_only_change_is_a_new_version_without_upload(make_registry, local_store):
    store = InstrumentedStore(local_store)
    registry = await make_registry(blobs=store)
    files = package("pdf-report")
    await publish(registry, files=files)
    run = files["scripts/run.py"]
    assert isinstance(run, PackageFile)
    files["scripts/run.py"] = PackageFile(run.data, executable=False)
    puts = store.calls["put"]
    pub = await publish(registry, files=files, expected=1)
    assert pub.version == 2
    assert store.calls["put"] == puts
    assert not (await registry.read_package(ACME, "pdf-report")).files["scripts/run.py"].executable


async def test_removed_files_are_gone_from_the_new_version(registry):
    files = package("pdf-report", files=4)
    await publish(registry, files=files)
    del files["references/part-002.md"]
    await publish(registry, files=files, expected=1)
    assert "references/part-002.md" not in (await registry.read_package(ACME, "pdf-report")).files
    assert "references/part-002.md" in (await registry.read_package(ACME, "pdf-report", 1)).files


async def test_the_expected_head_is_compared_and_any_skips_the_check(registry):
    # One registry, a skill of its own for each rule.
    # None refuses an existing skill.
    await publish(registry, slug="exists")
    with pytest.raises(SkillExists) as exists:
        await publish(registry, slug="exists", tag="other", expected=None)
    assert exists.value.current == 1

    # A stale expected head is a conflict carrying the current head, and changes nothing.
    await publish(registry, slug="stale")
    await publish(registry, slug="stale", tag="2", expected=1)
    before = await db_state(registry)
    with pytest.raises(HeadConflict) as stale:
        await publish(registry, slug="stale", tag="3", expected=1)
    assert (stale.value.expected, stale.value.current) == (1, 2)
    assert await db_state(registry) == before

    # An expected version of a missing skill is not found.
    with pytest.raises(SkillNotFound):
        await publish(registry, slug="missing", expected=3)
    assert await db_state(registry) == before

    # ANY skips the check: it creates the skill, then appends to it.
    assert (await publish(registry, slug="any", expected=ANY)).version == 1
    assert (await publish(registry, slug="any", tag="x", expected=ANY)).version == 2


async def test_sources_and_event_are_recorded_in_the_same_transaction(registry):
    await publish(registry, sources=["chat:1", "chat:2", "chat:1"])
    async with registry.engine.connect() as conn:
        sources = (
            (await conn.execute(sa.select(VersionSource.source).order_by(VersionSource.position)))
            .scalars()
            .all()
        )
        events = (await conn.execute(sa.select(Event.kind, Event.version))).all()
    assert sources == ["chat:1", "chat:2"]
    assert [tuple(e) for e in events] == [("published", 1)]


async def test_every_blob_of_a_published_version_is_live_and_claims_are_released(
    registry, local_store
):
    pub = await publish(registry)
    info = await registry.package_info(ACME, "pdf-report")
    rows = await blob_rows(registry)
    assert {e.digest for e in info.manifest.entries} <= {d for d, s in rows.items() if s == "live"}
    assert {e.digest for e in info.manifest.entries} <= await store_digests(local_store)
    assert await live_claims(registry) == 0
    assert pub.manifest_hash == info.manifest.hash


async def test_list_skills_pages_by_slug(registry):
    for slug in ["c-skill", "a-skill", "b-skill", "d-skill", "e-skill"]:
        await publish(registry, slug=slug, files=package(slug))
    page = await registry.list_skills(ACME, limit=2)
    assert [s.slug for s in page.items] == ["a-skill", "b-skill"]
    page = await registry.list_skills(ACME, limit=2, after=page.next_after)
    assert [s.slug for s in page.items] == ["c-skill", "d-skill"]
    page = await registry.list_skills(ACME, limit=2, after=page.next_after)
    assert [s.slug for s in page.items] == ["e-skill"]
    assert page.next_after is None


async def test_capacity_per_scope_counts_live_saved_skills(make_registry):
    registry = await make_registry(settings=Settings(capacity_saved=2))
    await publish(registry, slug="one", files=package("one"))
    await publish(registry, slug="two", files=package("two"))
    with pytest.raises(CapacityExceeded) as caught:
        await publish(registry, slug="three", files=package("three"))
    assert caught.value.limit == 2
    # another agent of the same workspace has its own budget
    other = Scope("acme", "helper")
    await registry.write_package(other, "three", package("three"), expected_head=None, actor="u1")
    # updates do not count against capacity
    await publish(registry, slug="one", files=package("one", tag="v2"), expected=1)


async def test_quota_is_net_of_the_package_replaced(make_registry):
    registry = await make_registry(settings=Settings(workspace_quota_bytes=2000))
    big = package("pdf-report", files=2, size=800)
    await publish(registry, files=big)
    # same size again: the write replaces as many bytes as it adds
    await publish(registry, files=package("pdf-report", files=2, size=800, tag="b"), expected=1)
    with pytest.raises(QuotaExceeded) as caught:
        await publish(registry, slug="second", files=package("second", files=2, size=800))
    assert caught.value.limit == 2000
    # shrinking is always allowed
    await publish(registry, files=package("pdf-report", files=1, size=10), expected=2)


async def test_marketplace_write_never_replaces_an_owner_saved_skill(registry):
    await publish(registry)
    request = WriteRequest(
        scope=ACME,
        slug="pdf-report",
        expected_head=ANY,
        origin=Origin.MARKETPLACE_INSTALL,
        actor="market",
    )
    with pytest.raises(OwnershipConflict):
        await write_package(registry.ctx, request, package("pdf-report", tag="market"))


async def test_new_skill_after_a_name_is_taken_in_another_scope(registry):
    await publish(registry)
    other = await registry.write_package(
        Scope("other-co"), "pdf-report", package("pdf-report"), expected_head=None, actor="u2"
    )
    assert other.version == 1


async def test_skill_md_frontmatter_name_must_equal_the_slug(registry):
    files = package("pdf-report")
    files["SKILL.md"] = skill_md("other-name")
    from registry.errors import FrontmatterInvalid  # noqa: PLC0415

    with pytest.raises(FrontmatterInvalid) as caught:
        await publish(registry, files=files)
    assert caught.value.rule == "name_mismatch"


async def test_a_write_makes_two_write_transactions(make_registry):
    """The read (one statement, its own transaction), the claim and the publish.

    The claim (with the scan cache) and the publish are the write's only write
    transactions, on either database; the read sends no `BEGIN` (SQLite) and commits
    nothing (PostgreSQL: autocommit).
    """
    registry = await make_registry()
    transactions: list[list[str]] = []

    def on_begin(_conn):
        transactions.append([])

    def on_statement(_conn, _cursor, statement, *_args):
        keyword = statement.split(maxsplit=1)[0].upper()
        if keyword not in ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA"):
            transactions[-1].append(keyword)

    sa.event.listen(registry.engine.sync_engine, "begin", on_begin)
    sa.event.listen(registry.engine.sync_engine, "before_cursor_execute", on_statement)
    for files, expected in (
        (package("pdf-report", files=5), None),
        (package("pdf-report", files=5, tag="b"), 1),
    ):
        transactions.clear()
        await publish(registry, files=files, expected=expected)
        read, *writes = transactions
        assert read == ["SELECT"]
        assert len(writes) == 2, transactions
        assert all({"INSERT", "UPDATE", "DELETE"} & set(w) for w in writes), transactions


class _LockedStatements:
    """Failpoints that record a publish transaction's statements (`RoundTrips`).

    Recording starts at `publish.begin` (the lock's statement included) and stops at
    `publish.before_commit`.
    """

    def __init__(self) -> None:
        self.round_trips: RoundTrips | None = None
        self.executions = 0

    @property
    def trips(self) -> list[list[str]]:
        assert self.round_trips is not None
        return self.round_trips.trips

    @property
    def statements(self) -> list[str]:
        assert self.round_trips is not None
        return self.round_trips.statements

    async def hit(self, name: str) -> None:
        if self.round_trips is None:
            return
        if name == "publish.begin":
            self.round_trips.start()
        elif name == "publish.before_commit":
            self.round_trips.stop()

    def through_sqlalchemy(self, *_args) -> None:
        if self.round_trips is not None and self.round_trips.recording:
            self.executions += 1

    def listen(self, engine) -> None:
        self.round_trips = RoundTrips(engine, recording=False).listen()
        sa.event.listen(engine.sync_engine, "before_execute", self.through_sqlalchemy)


async def test_the_locked_transaction_sends_the_same_statements_on_both_databases(
    make_registry,
):
    """One path: the same statements, one by one, each through `Connection.execute`.

    A 10-file package with sources, new and then updated, no capacity or quota pressure.
    PostgreSQL's lock is its first statement; SQLite's is the transaction's `BEGIN
    IMMEDIATE`, before `publish.begin`. Then the write context, the claims' release, the
    blob statuses, the uploads made live, the manifest and its entries (one multi-row
    insert), then the version's rows: a new skill's row, the version, its sources, its
    attestation (on the process's first signature, its key's row first: a read and an
    insert), the head's compare-and-swap (an update only), the event.
    """
    clock = _LockedStatements()
    registry = await make_registry(failpoints=clock)
    clock.listen(registry.engine)
    lock = ["SELECT"] if registry.engine.dialect.name == "postgresql" else []

    await publish(registry, files=package("pdf-report", files=10), sources=["chat:1"])
    new_skill = clock.statements
    sent_new = clock.executions
    clock.executions = 0
    await publish(
        registry, files=package("pdf-report", files=10, tag="b"), expected=1, sources=["chat:2"]
    )
    update = clock.statements
    steps = ["SELECT", "DELETE", "SELECT", "UPDATE", "INSERT", "INSERT"]
    first_key = ["SELECT", "INSERT"]
    assert new_skill == [
        *lock,
        *steps,
        "INSERT",
        "INSERT",
        "INSERT",
        *first_key,
        "INSERT",
        "INSERT",
    ]
    assert update == [*lock, *steps, "INSERT", "INSERT", "INSERT", "UPDATE", "INSERT"]
    # Each statement one round trip, and each one an execution of SQLAlchemy's.
    assert all(len(trip) == 1 for trip in clock.trips)
    assert (sent_new, clock.executions) == (len(new_skill), len(update))
    info = await registry.package_info(ACME, "pdf-report")
    assert info.head == 2


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_what_a_write_sends_on_postgresqls_wire(make_registry):
    """Counted in libpq's own trace, which sees what psycopg sends on its own too.

    The read in autocommit (no `BEGIN`, no `COMMIT`), then the claim and the publish, each
    a transaction whose `BEGIN` psycopg sends alone before its first statement. Once the
    statements are prepared on the connection (psycopg prepares a statement at its fifth
    execution), a write prepares nothing more.
    """
    registry = await make_registry(settings=Settings(db_pool_size=1, db_max_overflow=0))
    files = package("pdf-report", files=10)
    await publish(registry, files=files, sources=["chat:0"])
    for head in range(1, 7):  # past psycopg's prepare threshold
        files = package("pdf-report", files=10, tag=f"w{head}")
        await publish(registry, files=files, expected=head, sources=[f"chat:{head}"])
    with WireTrace(registry.engine) as wire:
        files = package("pdf-report", files=10, tag="traced")
        await publish(registry, files=files, expected=7, sources=["chat:7"])
        trips = wire.trips()
        prepares = wire.prepares()
    wire.close()
    # Each round trip: its `BEGIN` or `COMMIT`, or how many prepared statements it ran. A
    # multi-row insert without RETURNING is psycopg's `executemany`, its rows pipelined in
    # one round trip; with RETURNING, SQLAlchemy's one multi-row statement.
    shape = [len(t) if set(t) == {"PREPARED"} else " ".join(t) for t in trips]
    read = [1]
    # the blob rows (RETURNING), the claims and the scan cache (11 rows each), the index
    claim = ["BEGIN", 1, 11, 11, 1, "COMMIT"]
    # lock, context, claims, statuses, uploads live, manifest, entries, version, sources,
    # attestation, compare-and-swap, event
    publish_ = ["BEGIN", 1, 1, 1, 1, 1, 1, 11, 1, 1, 1, 1, 1, "COMMIT"]
    assert shape == [*read, *claim, *publish_], trips
    assert prepares == 0
    # The read's autocommit is undone before its connection goes back to the pool.
    async with registry.engine.connect() as conn:
        raw = await conn.get_raw_connection()
        assert raw.driver_connection.autocommit is False


async def test_a_slug_that_looks_like_a_live_skills_is_refused_naming_it(registry, local_store):
    # Before: both were skills of one scope, side by side in listings and targets (the
    # first pair in one folder on a case-insensitive file system).
    for first, second in (("λόγος", "λόγοσ"), ("pdf-report", "pdf-r\u0435port")):
        await _look_alike_refused(registry, local_store, first, second)


async def _look_alike_refused(registry, local_store, first, second):
    await publish(registry, first, package(first))
    before = await db_state(registry)
    stored = await store_digests(local_store)
    with pytest.raises(SlugLookAlike) as caught:
        await publish(registry, second, package(second))
    assert (caught.value.slug, caught.value.existing) == (second, first)
    assert await db_state(registry) == before
    assert await live_claims(registry) == 0
    assert await store_digests(local_store) >= stored
    # The same rule holds for catalog listings (a scope of their own) ...
    listing = await registry.marketplace.publish_listing(first, package(first), actor="u")
    assert listing.version == 1
    with pytest.raises(SlugLookAlike):
        await registry.marketplace.publish_listing(second, package(second), actor="u")
    # ... and only among live skills: once the first is deleted, its look-alike may be made.
    await registry.delete(ACME, first, actor="u")
    assert (await publish(registry, second, package(second))).version == 1
