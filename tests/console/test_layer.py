"""The console is an entry point and a client: it reaches the registry through `Registry`
and the services' value types, never through persistence; from the HTTP layer it takes only
the status table (`problems.status_for`), so that both answer an error alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_layers import ROOT, module_name, project_imports

CONSOLE = sorted((ROOT / "registry" / "console").rglob("*.py"))
ALLOWED = (
    "registry.console",
    "registry.api",
    "registry.domain",
    "registry.errors",
    "registry.services",
    "registry.settings",
    "registry.http.problems",
)


@pytest.mark.parametrize("path", CONSOLE, ids=lambda p: str(p.relative_to(ROOT)))
def test_console_imports_only_the_layers_below_it(path: Path):
    for imported in project_imports(path):
        assert any(imported == a or imported.startswith(a + ".") for a in ALLOWED), (
            f"{module_name(path)} imports {imported}"
        )


def test_the_check_sees_the_console_package():
    assert {p.name for p in CONSOLE} >= {"routing.py", "session.py", "access.py", "render.py"}
