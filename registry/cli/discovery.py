"""`skillreg discovery show|publish|unpublish`: what a scope serves in its discovery index."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.table import Table

from registry.api.types import DiscoveryIndex, DiscoverySettings
from registry.cli.common import (
    CliState,
    agent_option,
    json_option,
    make_scope,
    run_async,
    workspace_option,
)
from registry.cli.output import Output, human_size
from registry.errors import NotFound

actor_option = click.option("--actor", default="cli", show_default=True, help="Who acts.")


def _settings_data(settings: DiscoverySettings) -> dict[str, Any]:
    return {
        "workspace": settings.scope.workspace,
        "agent": settings.scope.agent,
        "enabled": settings.enabled,
        "everything": settings.everything,
        "public": settings.public,
        "skills": list(settings.skills),
        "revision": settings.revision,
        "updated_at": settings.updated_at,
        "updated_by": settings.updated_by,
    }


def _describe(settings: DiscoverySettings) -> str:
    scope = f"{settings.scope.workspace}/{settings.scope.agent}"
    if not settings.enabled or not (settings.everything or settings.skills):
        return f"{scope} publishes nothing for discovery"
    what = "every skill" if settings.everything else ", ".join(settings.skills)
    access = "publicly" if settings.public else "to read tokens of the workspace"
    return f"{scope} publishes {what} {access} (revision {settings.revision})"


def _render(settings: DiscoverySettings, index: DiscoveryIndex | None, console: Console) -> None:
    console.print(_describe(settings))
    if index is None or not index.entries:
        return
    table = Table(show_header=True, header_style="bold", box=None)
    for column in ("skill", "version", "type", "size", "sha256"):
        table.add_column(column)
    for entry in index.entries:
        table.add_row(
            entry.slug,
            str(entry.version),
            entry.type,
            human_size(entry.size),
            entry.sha256[:16],
        )
    console.print(table)


@click.group()
def discovery() -> None:
    """The Agent Skills discovery index a scope serves (docs/distribution.md)."""


@discovery.command()
@workspace_option(must_exist=True)
@agent_option
@json_option
@run_async
async def show(state: CliState, out: Output, *, workspace: str, agent: str) -> None:
    """What the scope publishes, and its index: each skill's version, type and digest."""
    scope = make_scope(workspace, agent)
    async with state.open() as reg:
        settings = await reg.discovery.settings(scope)
        try:
            index = await reg.discovery.index(scope)
        except NotFound:
            index = None
    data = {**_settings_data(settings), "index": [] if index is None else list(index.entries)}
    out.emit(data, lambda console: _render(settings, index, console))


@discovery.command()
@click.argument("slugs", nargs=-1)
@workspace_option()
@agent_option
@click.option("--all", "everything", is_flag=True, help="Publish every skill of the scope.")
@click.option(
    "--public/--private",
    default=None,
    help="Serve without a token, or only to the workspace's tokens (default: unchanged).",
)
@actor_option
@json_option
@run_async
async def publish(
    state: CliState,
    out: Output,
    *,
    slugs: tuple[str, ...],
    workspace: str,
    agent: str,
    everything: bool,
    public: bool | None,
    actor: str,
) -> None:
    """Publish SLUGS (or --all) in the scope's discovery index."""
    scope = make_scope(workspace, agent)
    async with state.open(write=f"skillreg discovery show -w {scope.workspace}") as reg:
        settings = await reg.discovery.update(
            scope, actor=actor, everything=True if everything else None, public=public, add=slugs
        )
    out.emit(_settings_data(settings), lambda console: console.print(_describe(settings)))


@discovery.command()
@click.argument("slugs", nargs=-1)
@workspace_option()
@agent_option
@click.option("--all", "everything", is_flag=True, help="Publish nothing any more.")
@actor_option
@json_option
@run_async
async def unpublish(
    state: CliState,
    out: Output,
    *,
    slugs: tuple[str, ...],
    workspace: str,
    agent: str,
    everything: bool,
    actor: str,
) -> None:
    """Stop publishing SLUGS (or, with --all, anything) in the scope's discovery index."""
    scope = make_scope(workspace, agent)
    async with state.open(write=f"skillreg discovery show -w {scope.workspace}") as reg:
        if everything:
            settings = await reg.discovery.update(scope, actor=actor, everything=False, skills=())
        else:
            settings = await reg.discovery.update(scope, actor=actor, remove=slugs)
    out.emit(_settings_data(settings), lambda console: console.print(_describe(settings)))


COMMANDS = (discovery,)
