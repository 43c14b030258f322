"""The `nested` fixture: folders nested deeper than a path or recursion reaches.

`nested(root, name, levels)` makes the chain (`tests/support/nesting.py::nest`) and removes
it when the test ends, deepest first, since pytest's own clean-up of old temporary folders
cannot (tests/support/nesting.py says why).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.nesting import nest, unnest


@pytest.fixture
def nested() -> Iterator[Callable[[Path, str, int], None]]:
    made: list[tuple[Path, str]] = []

    def make(root: Path, name: str, levels: int) -> None:
        made.append((root, name))
        nest(root, name, levels)

    yield make
    for root, name in made:
        unnest(root, name)
