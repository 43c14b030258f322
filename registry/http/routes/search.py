"""Full-text search over the heads of a scope: `GET /v1/workspaces/{w}/search?q=`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from registry.api.types import DEFAULT_LIMIT, MAX_LIMIT, SearchResults
from registry.http.auth import Caller, authorize, registry_of
from registry.http.routes.common import DEFAULT, Agent, Workspace, make_scope, problems

router = APIRouter(prefix="/v1/workspaces/{workspace}", tags=["search"])

Authorized = Annotated[Caller, Depends(authorize)]


class Hit(BaseModel):
    """A skill whose head matches, best first."""

    slug: str
    version: int = Field(description="the head version that matched")
    description: str
    snippet: str = Field(description="the best passage, plain text")
    highlights: list[tuple[int, int]] = Field(
        description="[start, end) character ranges of `snippet` that matched"
    )
    score: float = Field(description="orders the hits of this answer; higher is better")
    state: str = Field(description="`active`, or `deleted` when asked for")
    use_paused: bool


class SearchAnswer(BaseModel):
    """The hits of a search; `terms` is how the query was read."""

    workspace: str
    agent: str
    query: str
    terms: list[str]
    hits: list[Hit]

    @classmethod
    def of(cls, results: SearchResults) -> SearchAnswer:
        return cls(
            workspace=results.scope.workspace,
            agent=results.scope.agent,
            query=results.query,
            terms=list(results.terms),
            hits=[
                Hit(
                    slug=h.slug,
                    version=h.version,
                    description=h.description,
                    snippet=h.snippet,
                    highlights=list(h.highlights),
                    score=h.score,
                    state=h.state,
                    use_paused=h.use_paused,
                )
                for h in results.hits
            ],
        )


@router.get(
    "/search",
    name="search_skills",
    summary="Search the scope's skills: name, description, triggers and SKILL.md body",
    response_model=SearchAnswer,
    responses=problems(400, 403, 404, 422),
)
async def search_skills(
    request: Request,
    *,
    workspace: Workspace,
    caller: Authorized,
    q: Annotated[
        str,
        Query(
            min_length=1,
            max_length=1000,
            description="words, all required; `word*` matches a prefix",
        ),
    ],
    agent: Agent = DEFAULT,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    include_deleted: bool = False,
    include_paused: bool = False,
) -> SearchAnswer:
    """Ranked hits with snippets; deleted and use-paused skills only when asked for."""
    del caller
    results = await registry_of(request).search(
        make_scope(workspace, agent),
        q,
        limit=limit,
        include_deleted=include_deleted,
        include_paused=include_paused,
    )
    return SearchAnswer.of(results)
