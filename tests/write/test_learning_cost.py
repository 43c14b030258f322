"""What the learning rules cost the locked transaction (docs/write-path.md).

An ordinary write's locked transaction sends no statement about suppressions or pending
writes; a learning write's sends one more (it reads the slug's suppressions), and one more
again only when it needs a new saved slot (it looks for writes waiting before it).
"""

from __future__ import annotations

from sqlalchemy import event as sa_event

from registry import Origin
from registry.domain.model import ANY
from tests.support.learning import learned
from tests.support.packages import SLUG
from tests.support.scopes import ACME

LEARNING_TABLES = ("suppressions", "pending_writes", "skill_md_index", "loads")


class LockedStatements:
    """Failpoints and a cursor listener: the statements between the lock and the commit."""

    def __init__(self) -> None:
        self.inside = False
        self.statements: list[str] = []

    async def hit(self, name: str) -> None:
        if name == "publish.locked":
            self.inside = True
        elif name == "publish.before_commit":
            self.inside = False

    def listen(self, engine) -> None:
        def before(_conn, _cursor, statement, *_args):
            if self.inside:
                self.statements.append(statement)

        sa_event.listen(engine.sync_engine, "before_cursor_execute", before)


async def _write(registry, watch, text, origin):
    watch.statements.clear()
    await registry.write_package(
        ACME, SLUG, learned(text=text), expected_head=ANY, actor="u", origin=origin
    )
    return list(watch.statements)


async def test_ordinary_writes_pay_nothing_in_the_lock_and_learning_writes_one_select(
    make_registry,
):
    watch = LockedStatements()
    registry = await make_registry(failpoints=watch)
    watch.listen(registry.engine)
    await registry.write_package(ACME, SLUG, learned(text="0"), expected_head=None, actor="u")
    saved = await _write(registry, watch, "1", Origin.SAVE)
    learning = await _write(registry, watch, "2", Origin.LEARNING)
    assert not [s for s in saved if any(t in s for t in LEARNING_TABLES)]
    extra = [s for s in learning if any(t in s for t in LEARNING_TABLES)]
    assert len(extra) == 1
    assert "suppressions" in extra[0]
    assert extra[0].lstrip().upper().startswith("SELECT")
    assert len(learning) == len(saved) + 1
