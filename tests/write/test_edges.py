"""Edges of the write path where the one-change promise broke (each test failed before its fix).

Races are driven by failpoints and barriers, never by sleeps.
"""

from __future__ import annotations

import asyncio

from registry import Scope
from tests.support.packages import package
from tests.support.state import live_claims

ACME = Scope("acme")


class BarrierFailpoints:
    """Every writer waits at `name` until `parties` writers have arrived."""

    def __init__(self, name: str, parties: int) -> None:
        self.name = name
        self.barrier = asyncio.Barrier(parties)

    async def hit(self, name: str) -> None:
        if name == self.name:
            await self.barrier.wait()


async def test_two_writers_saving_the_same_package_leave_no_claims(make_registry):
    # Both writers claim and upload the same blobs; the second to take the lock finds its
    # package at the head ("unchanged") and must still release what it claimed.
    registry = await make_registry(failpoints=BarrierFailpoints("write.uploaded", 2))
    files = package("pdf-report")
    first, second = await asyncio.gather(
        registry.write_package(ACME, "pdf-report", files, expected_head=None, actor="a"),
        registry.write_package(ACME, "pdf-report", files, expected_head=None, actor="b"),
        return_exceptions=True,
    )
    outcomes = sorted([first, second], key=lambda p: getattr(p, "unchanged", True))
    assert outcomes[0].created, outcomes
    assert outcomes[1].unchanged, outcomes
    assert await live_claims(registry) == 0
