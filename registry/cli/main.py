"""`skillreg`: the command line entry point and its global options.

Exit codes: 0 success, 1 unexpected error, 2 usage, 3 refused input, 4 conflict,
5 not found, 6 configuration or connection (the table is in registry/cli/exits.py; the
root help's epilog lists them). A path a command reads that is
missing or of the wrong kind is a usage error (`common.FOLDER`), and so is a folder it
writes that is a file or lies under one (`common.OUTPUT_FOLDER`). Under `--json` a usage
error is printed as the same JSON error body as any other error (`Skillreg`).
"""

from __future__ import annotations

import gc
import importlib
import sys
from typing import TYPE_CHECKING, Any

import click

from registry import __version__
from registry.cli.common import CliState, json_option, redact, run_async, settings_with
from registry.cli.exits import INTERRUPTED
from registry.errors.missing import schema_name

if TYPE_CHECKING:
    from registry.cli.output import Output

# Every command but `init`: its name, the module (under registry/cli/) whose `COMMANDS`
# holds it, and its one-line help for `skillreg --help`. The modules are imported when a
# command runs, not to parse the command line or print the root help: `--help`,
# `--version` and the parse of a command import only what they need. The help lines are
# the commands' own (tests/cli/test_startup.py checks them against the docstrings).
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "publish": ("packages", "Publish the skill folder DIRECTORY as one atomic new version."),
    "show": ("packages", "Show REF (WORKSPACE/SLUG[@VERSION]): its version, manifest and files."),
    "get": ("packages", "Write the package REF (WORKSPACE/SLUG[@VERSION]) into an empty folder."),
    "list": ("packages", "List the skills of WORKSPACE."),
    "demo": ("packages", "Publish the bundled example skills into WORKSPACE and list them."),
    "catalog": (
        "marketplace",
        "The marketplace catalog: listings published and imported as packages.",
    ),
    "install": (
        "marketplace",
        "Install the listing REF (LISTING[@VERSION], the newest by default) into a workspace.",
    ),
    "update": (
        "marketplace",
        "Update the installed copy REF (WORKSPACE/SLUG) to its listing's newest version.",
    ),
    "jobs": ("marketplace", "The durable job queue: run workers, list and show jobs."),
    "history": ("history", "List the versions of REF (WORKSPACE/SLUG), newest first."),
    "diff": (
        "history",
        "Compare versions A and B of REF (WORKSPACE/SLUG); a proposal is written pN.",
    ),
    "restore": (
        "history",
        "Make VERSION of REF (WORKSPACE/SLUG) the head again, as a new version.",
    ),
    "proposals": (
        "proposals",
        "List, inspect and decide proposals (automated changes waiting for the owner).",
    ),
    "yank": (
        "revocations",
        "Revoke REF (SLUG@N with -w): never served for use again; a revoked head moves back.",
    ),
    "unyank": ("revocations", "Take back the revocation of REF (SLUG@N with -w)."),
    "state": (
        "controls",
        "Show the state of REF (WORKSPACE/SLUG): controls, pending proposal, content check.",
    ),
    "pause": ("controls", "Pause learning of REF: automated writes become proposals."),
    "resume": ("controls", "Resume learning of REF (WORKSPACE/SLUG)."),
    "stop-using": ("controls", "Stop using REF: runtimes no longer load it; its history is kept."),
    "resume-use": ("controls", "Resume use of REF (refused while its head is blocked)."),
    "auto-improve": ("controls", "Turn automatic improvements of REF on or off."),
    "delete": ("controls", "Delete REF: its versions are kept (archived) and the slug is free."),
    "exclude-source": (
        "controls",
        "Exclude SOURCE from WORKSPACE and roll back every head that depends on it.",
    ),
    "decisions": (
        "learning",
        "One list of open decisions across a workspace's agents; decide several at once.",
    ),
    "pending": ("learning", "Learning writes waiting for a saved slot: list, apply, drop."),
    "suppressions": (
        "learning",
        "Behaviours the owner undid (restores) or removed (deletes): list, lift.",
    ),
    "load": (
        "learning",
        "Record that a runtime loaded REF (WORKSPACE/SLUG@VERSION) for a conversation.",
    ),
    "loads": ("learning", "List the versions loaded for CONVERSATION in WORKSPACE, in order."),
    "gc": ("gc", "Reclaim orphaned blobs (safe while writers run); `gc stats` shows the figures."),
    "fsck": ("gc", "Check the registry end to end; exit 1 on any inconsistency."),
    "rescan": (
        "rescan",
        "Check every head and installed listing version with the current content rules.",
    ),
    "reviews": (
        "rescan",
        "Content reviews: blocking findings a rescan found in heads, for the owner to decide.",
    ),
    "reconcile": (
        "reconcile",
        "Make TARGET hold the skills of WORKSPACE in use, package-atomically; repair drift.",
    ),
    "lock": (
        "reconcile",
        "Pin the head version and manifest hash of every skill of WORKSPACE in use.",
    ),
    "target": ("reconcile", "Materialisation targets: directories `reconcile` keeps."),
    "sync": (
        "sync",
        "Keep TARGET equal to the skills of WORKSPACE in use, from the registry at URL.",
    ),
    "status": (
        "status",
        "Show storage figures, materialisation targets and each workspace's learning.",
    ),
    "serve": (
        "serve",
        "Serve the HTTP API until interrupted (SIGINT or SIGTERM end it gracefully).",
    ),
    "token": (
        "tokens",
        "Manage the bearer tokens of the HTTP API (one workspace and one role each).",
    ),
    "search": (
        "search",
        "Search the skills of a scope: name, description, triggers and SKILL.md body.",
    ),
    "reindex-search": (
        "search",
        "Rewrite the search document of every skill of a workspace (normally not needed).",
    ),
    "discovery": (
        "discovery",
        "The Agent Skills discovery index a scope serves (docs/distribution.md).",
    ),
    "keys": ("trust", "The Ed25519 keys that sign every version (docs/trust.md)."),
    "attestation": (
        "trust",
        "Print (or save) the signed attestation of WORKSPACE/SLUG[@N] (the head by default).",
    ),
    "verify": (
        "trust",
        "Check a version's attestation: signed by a trusted key, about exactly these files.",
    ),
}


def load_command(name: str) -> click.Command:
    """The command `name` of `LAZY_COMMANDS`, its module imported now."""
    module = importlib.import_module(f"registry.cli.{LAZY_COMMANDS[name][0]}")
    for command in module.COMMANDS:
        if command.name == name:
            return command  # type: ignore[no-any-return]
    msg = f"registry.cli.{LAZY_COMMANDS[name][0]} has no command {name!r}"
    raise LookupError(msg)


_JSON = "skillreg.json"  # the context's meta key: the command line asked for --json


class JsonUsageError(click.UsageError):
    """A usage error of a command run with `--json`: shown as the JSON error body (exit 2)."""

    def __init__(self, error: click.UsageError) -> None:
        super().__init__(error.format_message(), error.ctx)
        self.error = error

    def show(self, file: Any = None) -> None:  # noqa: ARG002 - JSON goes where Output puts it
        from registry.cli.output import Output  # noqa: PLC0415 - imported when needed

        Output(as_json=True).error(self.error, self.exit_code)


class Skillreg(click.Group):
    """The root group: commands loaded lazily; under `--json`, usage errors are JSON.

    The commands of `LAZY_COMMANDS` are imported when one is looked up to run (click's
    documented lazy group), and the root help lists them from the table, importing none.

    Click reports a usage error (a bad value, a missing or unknown option, a bad argument
    raised as `click.BadParameter` in a command) itself, as text, before or after the
    command's own error handling (`run_async`) could. The root group sees them all: its own
    options fail in `make_context`, every subcommand's (nested groups included) inside its
    `invoke`. `--json` is looked for in the raw arguments, since a usage error may come
    before the option is parsed (or from the option itself, for a command without it).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS:
            return load_command(cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [
            (name, LAZY_COMMANDS[name][1] if name in LAZY_COMMANDS else self._short_help(name))
            for name in self.list_commands(ctx)
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def _short_help(self, name: str) -> str:
        return self.commands[name].get_short_help_str(limit=80)

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


EPILOG = """\b
Exit codes:
  0    success
  1    unexpected error
  2    usage (a bad option or argument, a missing path)
  3    refused input (validation, blocked content, capacity, quota)
  4    conflict (compare-and-swap, exists)
  5    not found
  6    configuration or connection (bad URL, database unreachable or not initialised,
       an address serve cannot listen on)
  130  interrupted, nothing changed (Ctrl-C during a write lets it finish
       and reports it; a second Ctrl-C: outcome unknown, exit 1)
"""


@click.group(cls=Skillreg, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG)
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
    console = ctx.obj == CONSOLE
    ctx.obj = CliState(settings_with(database_url, blob_url), debug=debug, console=console)
    if console:
        started()


@cli.command()
@json_option
@run_async
async def init(state: CliState, out: Output) -> None:
    """Create or migrate the database and create the blob store.

    A PostgreSQL database that does not exist is created first, if the role may.
    """
    from registry.api import Registry  # noqa: PLC0415 - imported when needed

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
            + f"initialised database {data['database_url']} ({schema_name(revision)}) "
            f"and blob store {data['blob_url']}"
        ),
    )


CONSOLE = "skillreg.console"  # main()'s context object: the process is the console script


# The console script's garbage collection. Starting a command allocates about a million
# objects (SQLAlchemy, pydantic, the table definitions), nearly all of them kept until the
# process ends, and the collector's passes over them while the modules are imported, and
# again when the interpreter ends, cost about a fifth of a short command's CPU time
# (docs/benchmarks.md, "Start-up"). So `main()` turns the collector off while the command
# starts (`started()` turns it on again before the command runs, with what start-up made
# moved out of its sight: `gc.freeze()`), and freezes what is left when the command ends.
# A command that runs for long (`serve`, `jobs run`, `sync --watch`) runs with it on, as
# does a command run in-process (`cli()`, as the tests do): only `main()` turns it off.


def started() -> None:
    """Start-up is over: what it made is kept for good, and the collector runs again."""
    gc.freeze()
    gc.enable()


def main() -> None:
    """Console script entry point."""
    gc.disable()  # until `started()`, called once the command and its settings are loaded
    try:
        cli(prog_name="skillreg", obj=CONSOLE)
    except KeyboardInterrupt:
        # Interrupted while starting (imports, settings), before any command ran.
        sys.stderr.write("error: interrupted; nothing was changed\n")
        sys.exit(INTERRUPTED)
    finally:
        gc.freeze()  # the interpreter's last collections would only walk what start-up made
