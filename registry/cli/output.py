"""Output for people (rich) and machines (`--json`), and the error envelope."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from registry.domain.display import visible
from registry.errors import ContentBlocked, RegistryError

# A stored text is shown whole up to here (a message may hold 10,000 characters).
SHOWN_CHARS = 2000


def shown(text: object, limit: int = SHOWN_CHARS) -> str:
    r"""Text the registry stored, or a client sent, made safe to print with rich.

    Control and format characters become visible escapes (`\u001b`, `\u202e`: an escape
    sequence in a target's error clears no screen, plants no hyperlink and sets no window
    title; older rows, stored before the rule of `check_text`, included), and rich's markup
    is taken literally (`[red]` in a message is text). Every stored text a command prints
    for a person goes through this.
    """
    return escape(visible("" if text is None else str(text), limit))


def to_jsonable(value: Any) -> Any:  # noqa: PLR0911 - one branch per JSON-able kind
    """Dataclasses, enums, datetimes and paths as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, bytes):
        return {"bytes": len(value)}
    return value


class Output:
    """Where a command writes: JSON on stdout, or rich text for a person."""

    def __init__(self, *, as_json: bool) -> None:
        self.as_json = as_json
        self.console = PipeConsole(highlight=False)
        self.errors = Console(stderr=True, highlight=False)

    def emit(self, data: Any, human: Callable[[Console], None]) -> None:
        if self.as_json:
            sys.stdout.write(json.dumps(to_jsonable(data), indent=2, sort_keys=True) + "\n")
        else:
            human(self.console)

    def error(self, exc: BaseException, code: int) -> None:
        if self.as_json:
            body: dict[str, Any] = {
                "error": getattr(exc, "code", type(exc).__name__),
                "message": str(exc),
                "exit_code": code,
            }
            if isinstance(exc, RegistryError):
                body["details"] = to_jsonable(exc.details())
            elif isinstance(exc, click.UsageError):
                body.update(_usage_error(exc))
            sys.stdout.write(json.dumps(body, indent=2, sort_keys=True) + "\n")
        else:
            self.errors.print(f"[bold red]error:[/] {shown(exc)}", soft_wrap=True)
            findings = getattr(exc, "findings", None) if isinstance(exc, ContentBlocked) else None
            for f in findings or ():
                # What an owner approves with `--approve PATH:ORDINAL` (never the value).
                self.errors.print(
                    f"  finding {shown(f['path'])}:{f['ordinal']} "
                    f"(line {f['line']}, {f['pattern_class']})",
                    soft_wrap=True,
                )


class PipeConsole(Console):
    r"""A console that, into a pipe or a file, prints tables as TSV and never wraps lines.

    On a terminal a table fits the window, and rich wraps or cuts a value (`…`) to make it
    fit. Into a pipe nothing is cut: each table row is one line of tab-separated values (no
    header; a tab, a newline or a backslash in a value written `\t`, `\n`, `\\`), and
    other lines are not wrapped. `--json` is unaffected.
    """

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if self.is_terminal:
            super().print(*objects, **kwargs)
            return
        unwrapped = {**kwargs, "soft_wrap": True}
        if not any(isinstance(item, Table) for item in objects):
            super().print(*objects, **unwrapped)
            return
        for item in objects:
            if isinstance(item, Table):
                for row in zip(*(column.cells for column in item.columns), strict=True):
                    self.file.write("\t".join(_tsv(cell) for cell in row) + "\n")
            else:
                super().print(item, **unwrapped)


def _tsv(cell: Any) -> str:
    """A table cell as one TSV field: its plain text, tabs and newlines escaped."""
    text = cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def _usage_error(exc: click.UsageError) -> dict[str, Any]:
    """The body of a usage error (exit 2), found by click or raised as click's."""
    body: dict[str, Any] = {
        "error": "usage_error",
        "message": exc.format_message(),  # with the parameter it is about
    }
    if isinstance(exc, click.BadParameter) and exc.param is not None and exc.param.name:
        body["details"] = {"parameter": exc.param.name}
    return body


_KIB = 1024


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < _KIB or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= _KIB
    return f"{size} B"


def count(number: int, noun: str, plural: str = "") -> str:
    """`1 blob`, `2 blobs`: a number and its noun, in the plural unless it is one."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
