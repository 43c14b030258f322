"""What the console asks of a whole workspace: one function per question, one place each.

Today's `Registry` answers per scope (one agent at a time), so the console asks each agent
of the workspace in turn. Each question below is asked here and nowhere else, so that a
registry that answers for a whole workspace at once is wired in by changing one function:

- `open_decisions`: the pending proposals of every agent (`list_proposals` per agent);
- `decide_many`: several decisions, each its own compare-and-swap (`decide` per item; one
  that fails fails alone);
- `pending_writes`: learning writes waiting for capacity; this registry keeps none, so
  the answer is None and the pages leave the column out;
- `search`: the registry's search, if it has one (the search box is shown only then).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from registry.api import Registry
from registry.domain.model import Scope
from registry.errors import RegistryError
from registry.services.history.proposals import Decision, ProposalSummary
from registry.services.history.versions import VersionSummary
from registry.services.read import SkillSummary

# Pages of a listing the console reads at most per agent; past that it says so.
SKILLS_PER_AGENT: Final = 200
DECISIONS_PER_AGENT: Final = 200
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
    """One decision of a batch: the proposal's new status, or the error that refused it."""

    item: DecisionItem
    status: str | None
    version: int | None
    error: RegistryError | None


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
    """The pending proposals of every agent of `workspace` (or of `agent`), newest first."""
    agents = [agent] if agent is not None else await reg.agents(workspace)
    found: list[OpenDecision] = []
    for name in agents:
        page = await reg.list_proposals(Scope(workspace, name), limit=DECISIONS_PER_AGENT)
        found.extend(OpenDecision(name, p) for p in page.items)
    found.sort(key=lambda d: (d.proposal.created_at, d.proposal.id), reverse=True)
    return found


async def decide_many(
    reg: Registry, workspace: str, items: Sequence[DecisionItem], *, actor: str
) -> list[DecisionOutcome]:
    """Decide each item on its own; a refused one is reported and the rest go on."""
    outcomes: list[DecisionOutcome] = []
    for item in items:
        try:
            result = await reg.decide(
                Scope(workspace, item.agent), item.proposal, item.decision, actor=actor
            )
        except RegistryError as exc:
            outcomes.append(DecisionOutcome(item, None, None, exc))
            continue
        version = None if result.publication is None else result.publication.version
        outcomes.append(DecisionOutcome(item, result.status, version, None))
    return outcomes


async def pending_writes(reg: Registry, workspace: str) -> dict[str, int] | None:  # noqa: ARG001
    """Waiting learning writes per agent, or None: this registry keeps no pending writes."""
    return None


async def search(reg: Registry, workspace: str, query: str) -> list[Any]:
    """The registry's search results for `query` in `workspace` (its own result type)."""
    found = getattr(reg, "search", None)
    if not callable(found):
        return []
    results = await found(workspace, query)
    return list(getattr(results, "items", results))
