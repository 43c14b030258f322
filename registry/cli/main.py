"""`skillreg`: the command line entry point and its global options.

Exit codes: 0 success, 1 unexpected error, 2 usage, 3 refused input, 4 conflict,
5 not found (the table is in registry/cli/exits.py). A path a command reads that is
missing or of the wrong kind is a usage error (`common.FOLDER`), and so is a folder it
writes that is a file or lies under one (`common.OUTPUT_FOLDER`).
"""

from __future__ import annotations

import click

from registry import __version__
from registry.cli import (
    controls,
    discovery,
    gc,
    history,
    learning,
    marketplace,
    packages,
    proposals,
    reconcile,
    search,
    serve,
    status,
    sync,
    tokens,
)
from registry.cli.common import CliState, json_option, redact, run_async, settings_with
from registry.cli.output import Output
from registry.db.migrate import current_revision, ensure_database


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="skillreg")
@click.option("--database-url", help="Override SKILLREG_DATABASE_URL.")
@click.option("--blob-url", help="Override SKILLREG_BLOB_URL.")
@click.option("--debug", is_flag=True, help="Show tracebacks of unexpected errors.")
@click.pass_context
def cli(
    ctx: click.Context,
    database_url: str | None,
    blob_url: str | None,
    debug: bool,  # noqa: FBT001 - a click flag
) -> None:
    """skill-registry: transactional storage for agent skill packages."""
    ctx.obj = CliState(settings_with(database_url, blob_url), debug=debug)


@cli.command()
@json_option
@run_async
async def init(state: CliState, out: Output) -> None:
    """Create or migrate the database and create the blob store.

    A PostgreSQL database that does not exist is created first, if the role may.
    """
    created = await ensure_database(state.settings.database_url)
    async with state.open(initialize=True) as reg:
        revision = await current_revision(reg.engine)
    data = {
        "database_url": redact(state.settings.database_url),
        "blob_url": state.settings.blob_url,
        "revision": revision,
        "created_database": created,
    }
    out.emit(
        data,
        lambda c: c.print(
            ("created the database; " if created else "")
            + f"initialised database {data['database_url']} (revision {revision}) "
            f"and blob store {data['blob_url']}"
        ),
    )


for command in packages.COMMANDS:
    cli.add_command(command)
for command in marketplace.COMMANDS:
    cli.add_command(command)
for command in history.COMMANDS:
    cli.add_command(command)
for command in proposals.COMMANDS:
    cli.add_command(command)
for command in controls.COMMANDS:
    cli.add_command(command)
for command in learning.COMMANDS:
    cli.add_command(command)
for command in gc.COMMANDS:
    cli.add_command(command)
for command in reconcile.COMMANDS:
    cli.add_command(command)
for command in sync.COMMANDS:
    cli.add_command(command)
for command in status.COMMANDS:
    cli.add_command(command)
for command in serve.COMMANDS:
    cli.add_command(command)
for command in tokens.COMMANDS:
    cli.add_command(command)
for command in search.COMMANDS:
    cli.add_command(command)
for command in discovery.COMMANDS:
    cli.add_command(command)


def main() -> None:
    """Console script entry point."""
    cli(prog_name="skillreg")
