"""`skillreg`: the command line entry point and its global options.

Exit codes: 0 success, 1 unexpected error, 2 usage, 3 refused input, 4 conflict,
5 not found (the table is in registry/cli/exits.py). A path a command reads that is
missing or of the wrong kind is a usage error (`common.FOLDER`), and so is a folder it
writes that is a file or lies under one (`common.OUTPUT_FOLDER`). Under `--json` a usage
error is printed as the same JSON error body as any other error (`Skillreg`).
"""

from __future__ import annotations

from typing import Any

import click

from registry import __version__
from registry.api import Registry
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
    trust,
)
from registry.cli.common import CliState, json_option, redact, run_async, settings_with
from registry.cli.output import Output

_JSON = "skillreg.json"  # the context's meta key: the command line asked for --json


class JsonUsageError(click.UsageError):
    """A usage error of a command run with `--json`: shown as the JSON error body (exit 2)."""

    def __init__(self, error: click.UsageError) -> None:
        super().__init__(error.format_message(), error.ctx)
        self.error = error

    def show(self, file: Any = None) -> None:  # noqa: ARG002 - JSON goes where Output puts it
        Output(as_json=True).error(self.error, self.exit_code)


class Skillreg(click.Group):
    """The root group: under `--json`, usage errors are JSON like every other error.

    Click reports a usage error (a bad value, a missing or unknown option, a bad argument
    raised as `click.BadParameter` in a command) itself, as text, before or after the
    command's own error handling (`run_async`) could. The root group sees them all: its own
    options fail in `make_context`, every subcommand's (nested groups included) inside its
    `invoke`. `--json` is looked for in the raw arguments, since a usage error may come
    before the option is parsed (or from the option itself, for a command without it).
    """

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        wants_json = _asks_for_json(args)
        try:
            ctx = super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise (JsonUsageError(exc) if wants_json else exc) from None
        ctx.meta[_JSON] = wants_json
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except JsonUsageError:
            raise
        except click.UsageError as exc:
            if not ctx.meta.get(_JSON):
                raise
            raise JsonUsageError(exc) from None


def _asks_for_json(args: list[str]) -> bool:
    """Whether `--json` is among the arguments (before a `--` that ends the options)."""
    options = args[: args.index("--")] if "--" in args else args
    return "--json" in options


@click.group(cls=Skillreg, context_settings={"help_option_names": ["-h", "--help"]})
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
    created = await Registry.ensure_database(state.settings.database_url)
    async with state.open(initialize=True) as reg:
        revision = await reg.revision()
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
for command in trust.COMMANDS:
    cli.add_command(command)


def main() -> None:
    """Console script entry point."""
    cli(prog_name="skillreg")
