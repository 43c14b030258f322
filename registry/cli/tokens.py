"""`skillreg token create|revoke|list`: access tokens of the HTTP API."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.table import Table

from registry.api.types import TokenInfo
from registry.cli.common import CliState, json_option, run_async, workspace_option
from registry.cli.output import Output, shown
from registry.domain.access import Role


def _info(info: TokenInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "workspace": info.workspace,
        "role": info.role.value,
        "name": info.name,
        "created_at": info.created_at,
        "revoked_at": info.revoked_at,
        "last_used_at": info.last_used_at,
    }


@click.group()
def token() -> None:
    """Manage the bearer tokens of the HTTP API (one workspace and one role each)."""


@token.command()
@workspace_option("The workspace the token may use.")
@click.option(
    "--role",
    "-r",
    required=True,
    type=click.Choice([r.value for r in Role]),
    help="read < write < owner < admin.",
)
@click.option("--name", default="", help="A label to recognise the token by.")
@click.option("--actor", default="cli", show_default=True, help="Who creates it (audit event).")
@json_option
@run_async
async def create(
    state: CliState, out: Output, *, workspace: str, role: str, name: str, actor: str
) -> None:
    """Create a token. Its secret is printed once and stored only as a hash."""
    async with state.open(write=f"skillreg token list -w {workspace}") as reg:
        issued = await reg.tokens.create(workspace, role, name=name, actor=actor)

    def render(console: Console) -> None:
        console.print(
            f"created token {issued.info.id} ({issued.info.role.value} on {workspace}); "
            "it is shown this once:"
        )
        console.print(issued.token, soft_wrap=True)

    out.emit({**_info(issued.info), "token": issued.token}, render)


@token.command()
@click.argument("token_id")
@click.option("--actor", default="cli", show_default=True, help="Who revokes it (audit event).")
@json_option
@run_async
async def revoke(state: CliState, out: Output, *, token_id: str, actor: str) -> None:
    """Revoke the token TOKEN_ID (the id `token list` shows). Revoking twice is a no-op."""
    async with state.open(write=f"skillreg token revoke {token_id}") as reg:
        info = await reg.tokens.revoke(token_id, actor=actor)
    out.emit(_info(info), lambda c: c.print(f"revoked token {info.id} ({info.workspace})"))


@token.command(name="list")
@workspace_option("The workspace whose tokens to list.", must_exist=True)
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked tokens.")
@json_option
@run_async
async def list_(state: CliState, out: Output, *, workspace: str, include_revoked: bool) -> None:
    """List the tokens of a workspace (never their secrets)."""
    async with state.open() as reg:
        infos = await reg.tokens.list(workspace, include_revoked=include_revoked)

    def render(console: Console) -> None:
        if not infos:
            console.print("no tokens")
            return
        table = Table(show_header=True, header_style="bold", box=None)
        for column in ("id", "role", "name", "created", "last used", "revoked"):
            table.add_column(column)
        for i in infos:
            table.add_row(
                i.id,
                i.role.value,
                shown(i.name),
                f"{i.created_at:%Y-%m-%d %H:%M}",
                "-" if i.last_used_at is None else f"{i.last_used_at:%Y-%m-%d %H:%M}",
                "-" if i.revoked_at is None else f"{i.revoked_at:%Y-%m-%d %H:%M}",
            )
        console.print(table)

    out.emit([_info(i) for i in infos], render)


COMMANDS = (token,)
