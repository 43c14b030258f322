"""Imports on first use, so a command imports only what it runs.

`skillreg list` needs the engine, the settings and the read path; importing the whole
API (every service, Alembic, the marketplace, the scanners) for it would cost more than
the listing itself. Two tools keep the imports where they are used:

- `names(module, homes)`: a module `__getattr__` (PEP 562) that imports a public name's
  home module when the name is first looked up (`registry`, `registry.api`,
  `registry.api.types`); the names stay importable as before.
- `module(name)`: a module object whose code runs on first attribute access
  (`importlib.util.LazyLoader`), for a facade that calls into many services but runs
  only one per command (`registry/api/registry.py`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any


def names(module: str, homes: Mapping[str, tuple[str, str]]) -> Callable[[str], Any]:
    """A `__getattr__` for `module`: each name of `homes` from `(home module, attribute)`."""

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module hook's name
        home = homes.get(name)
        if home is None:
            msg = f"module {module!r} has no attribute {name!r}"
            raise AttributeError(msg)
        value = getattr(importlib.import_module(home[0]), home[1])
        setattr(sys.modules[module], name, value)  # found once; later look-ups skip this
        return value

    return __getattr__


def module(name: str) -> ModuleType:
    """The module `name`, its code run when one of its attributes is first used."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        msg = f"no module named {name!r}"
        raise ModuleNotFoundError(msg, name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    lazy = importlib.util.module_from_spec(spec)
    sys.modules[name] = lazy
    loader.exec_module(lazy)
    return lazy
