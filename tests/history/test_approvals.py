"""Content-check exceptions: exact-match approvals stored with versions, never values."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from registry import FindingRef
from registry.db.tables import ContentApproval
from registry.domain.scanner import value_hash
from registry.errors import ContentBlocked, FindingNotFound, StateConflict
from tests.support.history import CODENAME, StricterScanner, events, github_token
from tests.support.packages import SLUG, package
from tests.support.scopes import ACME

SECRET = github_token("approved-1")
NEW_SECRET = github_token("new-1")
CONFIG = "references/config.md"


def with_text(tag, **texts):
    files = package(SLUG, tag=tag)
    for path, text in texts.items():
        files[path] = text.encode()
    return files


def config(*values):
    return "\n".join(f"token: {v}" for v in values) + "\n"


async def approved_v1(registry):
    files = with_text("1", **{CONFIG: config(SECRET)})
    with pytest.raises(ContentBlocked) as caught:
        await registry.write_package(ACME, SLUG, files, expected_head=None, actor="u")
    assert (caught.value.path, caught.value.ordinal) == (CONFIG, 1)
    ref = FindingRef(caught.value.path, caught.value.ordinal)
    return await registry.write_package(
        ACME, SLUG, files, expected_head=None, actor="owner", approve=[ref]
    )


async def test_an_approved_finding_is_stored_as_hash_path_and_count_never_the_value(registry):
    pub = await approved_v1(registry)
    assert pub.version == 1
    async with registry.engine.connect() as conn:
        rows = (await conn.execute(sa.select(ContentApproval))).all()
    assert [(r.path, r.value_hash, r.occurrences, r.pattern_class) for r in rows] == [
        (CONFIG, value_hash(SECRET), 1, "github_token")
    ]
    assert not any(SECRET in str(value) for row in rows for value in row)


async def test_edits_keep_approved_occurrences_and_recheck_moved_duplicated_and_new_values(
    registry,
):
    await approved_v1(registry)
    # Still present where it was approved: passes without approving again.
    kept = with_text("2", **{CONFIG: config(SECRET)})
    assert (await registry.edit(ACME, SLUG, kept, base_version=1, actor="o")).version == 2
    for files, path, ordinal in (
        (with_text("m", **{"references/moved.md": config(SECRET)}), "references/moved.md", 1),
        (with_text("d", **{CONFIG: config(SECRET, SECRET)}), CONFIG, 2),
        (with_text("n", **{CONFIG: config(SECRET, NEW_SECRET)}), CONFIG, 2),
    ):
        with pytest.raises(ContentBlocked) as caught:
            await registry.edit(ACME, SLUG, files, base_version=2, actor="o")
        assert (caught.value.path, caught.value.ordinal) == (path, ordinal)


async def test_an_approved_exception_survives_a_restore_and_a_new_secret_is_still_blocked(
    registry,
):
    await approved_v1(registry)
    await registry.edit(ACME, SLUG, with_text("clean"), base_version=1, actor="o")
    restored = await registry.restore(ACME, SLUG, 1, expected_head=2, actor="o")
    assert restored.version == 3
    assert SECRET in (await registry.read_package(ACME, SLUG)).files[CONFIG].data.decode()
    with pytest.raises(ContentBlocked) as caught:
        await registry.edit(
            ACME,
            SLUG,
            with_text("x", **{CONFIG: config(SECRET, NEW_SECRET)}),
            base_version=3,
            actor="o",
        )
    assert caught.value.ordinal == 2
    same = with_text("y", **{CONFIG: config(SECRET)})
    assert (await registry.edit(ACME, SLUG, same, base_version=3, actor="o")).version == 4


async def test_approving_a_finding_that_is_not_there_is_refused(registry):
    with pytest.raises(FindingNotFound):
        await registry.write_package(
            ACME,
            SLUG,
            with_text("1", **{CONFIG: config(SECRET)}),
            expected_head=None,
            actor="o",
            approve=[FindingRef(CONFIG, 2)],
        )


async def test_a_version_blocked_by_todays_rules_until_the_owner_approves_it(make_registry):
    before = await make_registry()
    await before.write_package(
        ACME, SLUG, with_text("1", **{CONFIG: CODENAME}), expected_head=None, actor="u"
    )
    await before.write_package(ACME, SLUG, with_text("2"), expected_head=1, actor="u")
    registry = await make_registry(scanner=StricterScanner())
    with pytest.raises(ContentBlocked) as caught:
        await registry.restore(ACME, SLUG, 1, expected_head=2, actor="o")
    assert (caught.value.path, caught.value.pattern_class) == (CONFIG, "codename")
    # Make the old package the head the way an owner might (before the rules changed).
    await before.restore(ACME, SLUG, 1, expected_head=2, actor="o")
    await registry.stop_using(ACME, SLUG, actor="o")
    status = await registry.skill_status(ACME, SLUG)
    assert (status.state, status.blocked_by["path"]) == ("blocked", CONFIG)
    with pytest.raises(StateConflict) as refused:
        await registry.resume_use(ACME, SLUG, actor="o")
    assert refused.value.state == "blocked"

    result = await registry.approve_findings(ACME, SLUG, 3, [FindingRef(CONFIG, 1)], actor="owner")
    assert result.blocked_by is None
    assert (await events(registry))[-1][2] == "findings_approved"
    assert (await registry.skill_status(ACME, SLUG)).state == "paused_use"
    assert (await registry.resume_use(ACME, SLUG, actor="o")).state == "ready"
