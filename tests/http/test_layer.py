"""The HTTP layer is an entry point: it reaches the registry through `Registry` and the
services' value types, never through persistence or the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_layers import ROOT, module_name, project_imports

HTTP = sorted((ROOT / "registry" / "http").rglob("*.py"))
ALLOWED = (
    "registry.http",
    "registry.api",
    "registry.bootstrap",
    "registry.domain",
    "registry.errors",
    "registry.services",
    "registry.settings",
    "blobstore",
)


@pytest.mark.parametrize("path", HTTP, ids=lambda p: str(p.relative_to(ROOT)))
def test_http_imports_only_the_layers_below_it(path: Path):
    for imported in project_imports(path):
        allowed = imported == "registry" or any(
            imported == a or imported.startswith(a + ".") for a in ALLOWED
        )
        assert allowed, f"{module_name(path)} imports {imported}"


def test_the_check_sees_the_http_package():
    assert {p.name for p in HTTP} >= {"app.py", "auth.py", "problems.py", "limits.py"}
