"""Shared pieces of the commands: global state, the async runner, references, options."""

from __future__ import annotations

import asyncio
import functools
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from registry.cli.exits import INTERRUPTED, OK, UNEXPECTED, exit_code
from registry.domain.model import DEFAULT_AGENT, Scope, check_workspace
from registry.domain.numbers import MAX_ID, MAX_VERSION, decimal
from registry.errors import InvalidName, RegistryError, SkillNotFound

if TYPE_CHECKING:
    from registry.api import Registry
    from registry.settings import Settings

# The API (SQLAlchemy's engine, every service), the settings (pydantic) and rich are
# imported where a command first needs them, not when the command line is parsed: the
# parse, `--help` and `--version` stay cheap (registry/cli/main.py's lazy group).


@dataclass
class CliState:
    """Global options, shared by every command."""

    settings: Settings
    debug: bool = False
    # Run as the console script (`main()`): the process ends with the command, so an
    # interrupt after a write ended stays ignored; an in-process caller gets its handler back.
    console: bool = False

    # The workspace a reading command names (`workspace_option(must_exist=True)`).
    existing_workspace: str | None = None

    @asynccontextmanager
    async def open(
        self, *, initialize: bool = False, write: str | None = None
    ) -> AsyncIterator[Registry]:
        """The registry for a command (the database must be initialised unless asked).

        `write` makes the block a write that Ctrl-C never misreports, once the registry is
        open (`interrupt_safe_write`); it is the command that shows the write's outcome,
        named if a second Ctrl-C leaves it unknown (`skillreg state acme/pdf-report`).

        Unknown names are reported with the nearest known ones: a reading command's
        workspace that does not exist is `WorkspaceNotFound` before the command reads,
        and a `SkillNotFound` the command meets is replaced by the one
        `Registry.explain_not_found` gives (its workspace missing, or the nearest slugs).
        """
        from registry.api import Registry  # noqa: PLC0415 - see the imports' note

        async with Registry.open(settings=self.settings, initialize=initialize) as reg:
            if self.existing_workspace is not None:
                await reg.require_workspace(self.existing_workspace)
            try:
                if write is None:
                    yield reg
                else:
                    async with interrupt_safe_write(check=write):
                        yield reg
            except SkillNotFound as exc:
                if type(exc) is not SkillNotFound or exc.nearest:
                    raise  # a subclass (an archived skill) says more than nearest names
                try:
                    explained = await reg.explain_not_found(exc)
                except RegistryError:
                    raise exc from None
                raise explained from None


class OutcomeUnknown(Exception):
    """A write stopped by a second Ctrl-C before it could tell whether it committed."""


@asynccontextmanager
async def interrupt_safe_write(ref: str = "", *, check: str = "") -> AsyncIterator[None]:
    """Run a write so that Ctrl-C never misreports it.

    Cancelled at an arbitrary await, a write may have committed with nobody told, and the
    command would exit 130 ("nothing happened") for a change that happened. So the first
    Ctrl-C lets the write finish (its deadlines bound it: lock wait, uploads) and the
    command reports its real outcome; a second one stops waiting, and the command says the
    outcome is unknown and how to look: `check`, a command (`skillreg history REF` for a
    package write to REF). Once the write has ended, an interrupt is ignored: what is left
    only prints the outcome. Commands use it through `CliState.open(write=...)`.
    """
    check = check or f"skillreg history {ref}"
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only: a command run from another has none
        return
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    interrupts = 0

    def on_interrupt() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            sys.stderr.write(
                "interrupted: finishing the write in progress; Ctrl-C again to stop waiting\n"
            )
            sys.stderr.flush()
        else:
            task.cancel()
            sys.stderr.write("interrupted again: no longer waiting for the write\n")
            sys.stderr.flush()

    loop.add_signal_handler(signal.SIGINT, on_interrupt)
    try:
        yield
    except asyncio.CancelledError:
        if interrupts < 2:  # noqa: PLR2004 - the second Ctrl-C
            raise
        task.uncancel()
        msg = f"interrupted: the outcome of the write is unknown; check with `{check}`"
        raise OutcomeUnknown(msg) from None
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def settings_with(database_url: str | None, blob_url: str | None) -> Settings:
    """Settings from the environment, overridden by command-line URLs."""
    from registry.settings import Settings  # noqa: PLC0415 - see the imports' note

    base = Settings()
    overrides = {k: v for k, v in {"database_url": database_url, "blob_url": blob_url}.items() if v}
    return base.model_copy(update=overrides) if overrides else base


json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


class WorkspaceName(click.ParamType[str, str]):
    """A workspace name: a usage error (exit 2) naming the rule unless it follows it."""

    name = "workspace"

    def convert(self, value: str, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return check_workspace(str(value))
        except InvalidName as exc:
            self.fail(str(exc), param, ctx)


WORKSPACE = WorkspaceName()


class _PositionalWorkspace(click.Argument):
    """The deprecated positional WORKSPACE: accepted, never shown in the usage line."""

    def get_usage_pieces(self, ctx: click.Context) -> list[str]:  # noqa: ARG002 - click's
        return []


_POSITIONAL = "positional_workspace"


def workspace_option(
    help_text: str = "The workspace.",
    *,
    required: bool = True,
    default: str | None = None,
    must_exist: bool = False,
    positional_alias: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`-w/--workspace WORKSPACE`: the one way every command names a workspace.

    The name is checked as it is parsed (`check_workspace`, a usage error naming the
    rule). A command that reads says `must_exist=True`: a workspace nothing was recorded
    for is then `WorkspaceNotFound` (exit 5, naming the nearest workspaces) when the
    command opens the registry (`CliState.open`), not an empty answer. A command that
    took the workspace as its first argument before says `positional_alias=True`:
    `skillreg list acme` still works for one release, with a one-line warning on
    stderr; given both ways, or twice, it is a usage error. Put the decorator where the
    old argument was: above the command's own arguments.
    """

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        # No `default=None`: click takes an explicit None as a default, and an option
        # with a default is never missing.
        defaults = {} if default is None else {"default": default, "show_default": True}
        option = click.option(
            "--workspace",
            "-w",
            "workspace",
            type=WORKSPACE,
            required=required and not positional_alias,
            help=help_text,
            **defaults,  # type: ignore[arg-type]
        )

        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            workspace = kwargs.get("workspace")
            if positional_alias:
                workspace = _resolve_workspace(
                    workspace, kwargs.pop(_POSITIONAL), required=required
                )
                kwargs["workspace"] = workspace
            if must_exist and workspace is not None:
                state = click.get_current_context().find_object(CliState)
                assert state is not None
                state.existing_workspace = workspace
            return f(*args, **kwargs)

        if not positional_alias:
            return option(wrapper)
        argument = click.argument(_POSITIONAL, nargs=-1, type=WORKSPACE, cls=_PositionalWorkspace)
        return argument(option(wrapper))

    return decorate


def _resolve_workspace(
    option: str | None, positional: tuple[str, ...], *, required: bool
) -> str | None:
    ctx = click.get_current_context()
    if len(positional) > 1:
        msg = f"Got unexpected extra argument ({' '.join(positional[1:])})"
        raise click.UsageError(msg, ctx)
    if positional and option is not None:
        msg = f"the workspace is given twice ({option!r} and {positional[0]!r}): use -w only"
        raise click.UsageError(msg, ctx)
    if positional:
        command = " ".join(["skillreg", *ctx.command_path.split()[1:]])
        click.echo(
            f"warning: '{command} WORKSPACE' is deprecated; use '{command} -w WORKSPACE'",
            err=True,
        )
        return positional[0]
    if option is None and required:
        param = next(p for p in ctx.command.params if p.name == "workspace")
        raise click.MissingParameter(ctx=ctx, param=param)
    return option


FOLDER = click.Path(exists=True, file_okay=False, path_type=Path)
"""A folder the command reads. One rule for every path a command reads: one that is missing,
or of the wrong kind (a file where a folder is expected, a folder where a file is), is a
usage error (exit 2), found by click before the command runs."""


class OutputFolder(click.Path):
    """A folder a command writes: missing (it is made) or a folder, never a file.

    As for `FOLDER`, a path that cannot be one is a usage error (exit 2) found before the
    command runs: an existing file, a path under a file, a name the system refuses as
    too long. Whether the folder is empty is the writer's rule (refused, exit 3).
    """

    def __init__(self) -> None:
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        path = super().convert(value, param, ctx)
        assert isinstance(path, Path)  # path_type=Path
        try:
            path.stat()
        except FileNotFoundError:
            pass  # missing: the command makes it
        except NotADirectoryError:
            self.fail(f"{str(path)!r}: {self._file_above(path)!r} is a file.", param, ctx)
        except OSError as exc:
            self.fail(f"{str(path)!r}: {exc.strerror}.", param, ctx)
        return path

    @staticmethod
    def _file_above(path: Path) -> str:
        for parent in reversed(path.parents):
            if parent.is_file():
                return str(parent)
        return str(path.parent)


OUTPUT_FOLDER = OutputFolder()
"""A folder a command writes into (`get --out`)."""


_SHOWN_DIGITS = 24


class DecimalRange(click.IntRange):
    r"""A whole number from `minimum` to `maximum`, typed as ASCII decimal digits.

    Python's `int()`, which click's `INT` and `IntRange` use, reads digits of other scripts
    (`int("\u0661")` is 1) and numbers no column holds (2**63 overflows the driver): a
    number is read with `registry.domain.numbers.decimal` instead; anything else is a usage
    error.
    """

    def __init__(self, minimum: int, maximum: int) -> None:
        super().__init__(minimum, maximum)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int):  # a default
            return super().convert(value, param, ctx)
        assert self.max is not None
        text = str(value)
        number = decimal(text, int(self.max))
        if number is None:
            if not (text.isascii() and text.isdigit()):
                self.fail(f"{text!r} is not a whole number in ASCII digits.", param, ctx)
            shown = text if len(text) <= _SHOWN_DIGITS else f"a number of {len(text)} digits"
            self.fail(f"{shown} is not in the range {self.min}<=x<={self.max}.", param, ctx)
        return super().convert(number, param, ctx)


VERSION = DecimalRange(1, MAX_VERSION)
"""A version number (1 to MAX_VERSION)."""
ROW_ID = DecimalRange(1, MAX_ID)
"""The id of a proposal, job, pending write or suppression, or a cursor of ids."""


def version_number(text: str) -> int | None:
    """A version number from text (`decimal`, at least 1), or None."""
    number = decimal(text, MAX_VERSION)
    return number if number is not None and number >= 1 else None


def row_id(text: str) -> int | None:
    """A row id from text (`decimal`, at least 1), or None."""
    number = decimal(text, MAX_ID)
    return number if number is not None and number >= 1 else None


agent_option = click.option(
    "--agent", default=DEFAULT_AGENT, show_default=True, help="The agent inside the workspace."
)


def run_async(body: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async command body; map exceptions to exit codes and one-line messages.

    The body receives the `CliState` and an `Output` first, then the command's parameters.
    Unexpected errors print one line (the traceback only with `--debug`).
    """

    @functools.wraps(body)
    def wrapper(*args: Any, as_json: bool = False, **kwargs: Any) -> None:
        from registry.cli.output import Output  # noqa: PLC0415 - see the imports' note

        state = click.get_current_context().find_object(CliState)
        assert state is not None
        out = Output(as_json=as_json)
        previous = signal.getsignal(signal.SIGINT)
        try:
            asyncio.run(body(state, out, *args, **kwargs))
        except (click.exceptions.Exit, click.ClickException):
            raise
        except KeyboardInterrupt:
            # Before any write began, or in a command that only reads: nothing changed.
            out.error(KeyboardInterrupt("interrupted; nothing was changed"), INTERRUPTED)
            sys.exit(INTERRUPTED)
        except Exception as exc:
            code = exit_code(exc)
            if state.debug and code == UNEXPECTED:
                raise
            out.error(exc, code)
            sys.exit(code)
        finally:
            if not state.console and threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, previous)
        sys.exit(OK)

    return wrapper


def nonblank(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A click callback: text (or each of a repeated option's values) that is not blank.

    A source reference is opaque, but an empty or all-blank one names nothing: recorded,
    it could never be matched or excluded on purpose.
    """
    for text in value if isinstance(value, tuple) else (value,):
        if text is not None and not text.strip():
            msg = f"{text!r}: must not be empty or blank"
            raise click.BadParameter(msg, ctx, param)
    return value


def parse_ref(ref: str) -> tuple[str, str, int | None]:
    """`WORKSPACE/SLUG[@VERSION]` -> (workspace, slug, version)."""
    version: int | None = None
    body = ref
    if "@" in ref:
        body, _, raw = ref.rpartition("@")
        version = version_number(raw)
        if version is None:
            msg = f"{ref!r}: the version after '@' must be a whole number from 1 to {MAX_VERSION}"
            raise click.BadParameter(msg)
    workspace, sep, slug = body.partition("/")
    if not sep or not workspace or not slug:
        msg = f"{ref!r}: expected WORKSPACE/SLUG[@VERSION]"
        raise click.BadParameter(msg)
    return workspace, slug, version


def make_scope(workspace: str, agent: str) -> Scope:
    """A scope from command-line text (a bad name is a usage error, exit 2)."""
    try:
        return Scope(workspace, agent)
    except InvalidName as exc:
        raise click.BadParameter(str(exc)) from None


def redact(url: str) -> str:
    """A URL with its password hidden, for display."""
    from sqlalchemy.engine import make_url  # noqa: PLC0415 - see the imports' note

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - display only; a non-SQLAlchemy URL is shown as is
        return url
