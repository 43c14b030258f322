"""`skillreg search QUERY` and `skillreg reindex-search`: full-text search of a scope."""

from __future__ import annotations

import click
from rich.console import Console
from rich.text import Text

from registry.api.types import DEFAULT_LIMIT, MAX_LIMIT, SearchHit, SearchResults
from registry.cli.common import (
    CliState,
    DecimalRange,
    agent_option,
    json_option,
    make_scope,
    run_async,
    workspace_option,
)
from registry.cli.output import Output


def _snippet(hit: SearchHit) -> Text:
    text = Text(hit.snippet)
    for start, end in hit.highlights:
        text.stylize("bold yellow", start, end)
    return text


def _render(results: SearchResults, console: Console) -> None:
    if not results.hits:
        terms = " ".join(results.terms) or "(no words)"
        console.print(f"no skill of {results.scope.workspace} matches {terms}")
        return
    for hit in results.hits:
        flags = [
            f for f, on in (("deleted", hit.state != "active"), ("paused", hit.use_paused)) if on
        ]
        suffix = f" ({', '.join(flags)})" if flags else ""
        console.print(Text(f"{hit.slug}@{hit.version}{suffix}", style="bold"), soft_wrap=True)
        console.print(Text("  ") + _snippet(hit), soft_wrap=True)


@click.command()
@click.argument("query")
@workspace_option("The workspace to search.", must_exist=True)
@agent_option
@click.option(
    "--limit",
    type=DecimalRange(1, MAX_LIMIT),
    default=DEFAULT_LIMIT,
    show_default=True,
    help="At most this many hits.",
)
@click.option("--include-deleted", is_flag=True, help="Also search deleted skills.")
@click.option("--include-paused", is_flag=True, help="Also search skills whose use is paused.")
@json_option
@run_async
async def search(
    state: CliState,
    out: Output,
    *,
    query: str,
    workspace: str,
    agent: str,
    limit: int,
    include_deleted: bool,
    include_paused: bool,
) -> None:
    """Search the skills of a scope: name, description, triggers and SKILL.md body.

    Every word is required; `word*` matches a prefix. Hits come best first, each with its
    head version and the passage that matched.
    """
    scope = make_scope(workspace, agent)
    async with state.open() as reg:
        results = await reg.search(
            scope,
            query,
            limit=limit,
            include_deleted=include_deleted,
            include_paused=include_paused,
        )
    out.emit(results, lambda console: _render(results, console))


@click.command(name="reindex-search")
@workspace_option("The workspace to reindex.")
@json_option
@run_async
async def reindex_search(state: CliState, out: Output, *, workspace: str) -> None:
    """Rewrite the search document of every skill of a workspace (normally not needed)."""
    async with state.open() as reg:
        written = await reg.reindex_search(workspace)
    out.emit(
        {"workspace": workspace, "documents": written},
        lambda console: console.print(f"reindexed {written} skills of {workspace}"),
    )


COMMANDS = (search, reindex_search)
