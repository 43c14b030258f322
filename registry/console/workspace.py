"""What the console asks of a whole workspace: one function per question, one place each.

- `skills_by_agent`: the live skills of every agent with their heads (`list_skills` and
  `history` per agent);
- `open_decisions`: the one list of open decisions across agents (`reg.learning.decisions`);
- `decide_many`: several decisions, each its own compare-and-swap
  (`reg.learning.decide_many`: one that fails fails alone);
- `pending_writes`: learning writes waiting for a saved slot, counted per agent
  (`reg.learning.pending_writes`);
- `search`: full-text search of every agent's heads (`Registry.search` per agent).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from registry.api import Registry
from registry.api.types import (
    Decision,
    DecisionRequest,
    ProposalSummary,
    SearchHit,
    SkillSummary,
    VersionSummary,
)
from registry.domain.model import Scope

# Pages of a listing the console reads at most per agent; past that it says so.
SKILLS_PER_AGENT: Final = 200
DECISIONS_SHOWN: Final = 200
SEARCH_PER_AGENT: Final = 20
# Reads in flight at once for one page (the database pool is small).
_READS: Final = 4


@dataclass(frozen=True)
class SkillRow:
    """A skill on the overview: its listing entry and its head version."""

    skill: SkillSummary
    head: VersionSummary | None


@dataclass(frozen=True)
class AgentSkills:
    agent: str
    skills: list[SkillRow]
    more: bool


@dataclass(frozen=True)
class OpenDecision:
    """A pending proposal and the agent whose skill it is for."""

    agent: str
    proposal: ProposalSummary


@dataclass(frozen=True)
class DecisionItem:
    agent: str
    proposal: int
    decision: Decision


@dataclass(frozen=True)
class DecisionOutcome:
    """One decision of a batch: the proposal's new status, or why it was refused."""

    item: DecisionItem
    status: str | None
    version: int | None
    error: str | None


async def _gather_bounded(calls: Sequence[Callable[[], Awaitable[Any]]]) -> list[Any]:
    gate = asyncio.Semaphore(_READS)

    async def one(call: Callable[[], Awaitable[Any]]) -> Any:
        async with gate:
            return await call()

    return list(await asyncio.gather(*(one(c) for c in calls)))


async def skills_by_agent(reg: Registry, workspace: str) -> list[AgentSkills]:
    """The live skills of every agent of `workspace`, each with its head version."""
    out: list[AgentSkills] = []
    for agent in await reg.agents(workspace):
        scope = Scope(workspace, agent)
        page = await reg.list_skills(scope, limit=SKILLS_PER_AGENT)

        def head_of(
            slug: str, scope: Scope = scope
        ) -> Callable[[], Awaitable[VersionSummary | None]]:
            async def call() -> VersionSummary | None:
                items = (await reg.history(scope, slug, limit=1)).items
                return items[0] if items else None

            return call

        heads = await _gather_bounded([head_of(s.slug) for s in page.items])
        rows = [SkillRow(s, h) for s, h in zip(page.items, heads, strict=True)]
        out.append(AgentSkills(agent, rows, page.next_after is not None))
    return out


async def open_decisions(
    reg: Registry, workspace: str, *, agent: str | None = None
) -> list[OpenDecision]:
    """The open decisions of every agent of `workspace` (or of `agent`), newest first."""
    page = await reg.learning.decisions(workspace, agent=agent, limit=DECISIONS_SHOWN)
    return [OpenDecision(p.agent, p) for p in page.items]


async def decide_many(
    reg: Registry, workspace: str, items: Sequence[DecisionItem], *, actor: str
) -> list[DecisionOutcome]:
    """Decide each item on its own; a refused one is reported and the rest go on."""
    requests = [DecisionRequest(item.proposal, item.decision) for item in items]
    results = await reg.learning.decide_many(workspace, requests, actor=actor)
    outcomes: list[DecisionOutcome] = []
    for item, done in zip(items, results, strict=True):
        if done.result is None:
            error = done.error or {}
            outcomes.append(DecisionOutcome(item, None, None, str(error.get("message", ""))))
            continue
        publication = done.result.publication
        version = None if publication is None else publication.version
        outcomes.append(DecisionOutcome(item, done.result.status, version, None))
    return outcomes


async def pending_writes(reg: Registry, workspace: str) -> dict[str, int]:
    """Learning writes waiting for a saved slot, counted per agent."""
    counts: dict[str, int] = {}
    for waiting in await reg.learning.pending_writes(workspace):
        counts[waiting.agent] = counts.get(waiting.agent, 0) + 1
    return counts


@dataclass(frozen=True)
class FoundSkill:
    """A search hit and the agent whose skill it is."""

    agent: str
    hit: SearchHit

    @property
    def slug(self) -> str:
        return self.hit.slug

    @property
    def description(self) -> str:
        return self.hit.description


async def search(reg: Registry, workspace: str, query: str) -> list[FoundSkill]:
    """The skills of every agent of `workspace` that match `query`, best first per agent."""
    found: list[FoundSkill] = []
    for agent in await reg.agents(workspace):
        results = await reg.search(Scope(workspace, agent), query, limit=SEARCH_PER_AGENT)
        found.extend(FoundSkill(agent, hit) for hit in results.hits)
    return found
