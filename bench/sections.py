"""A section of the benchmark page: how one scenario's results are rendered."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.formatting import Json


@dataclass(frozen=True)
class Section:
    """`render(results)` returns the section's Markdown; `description` opens it."""

    render: Callable[[Json], str]
    description: str
