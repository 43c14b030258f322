"""The import rules of docs/architecture.md, checked on the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*ROOT.glob("registry/**/*.py"), *ROOT.glob("blobstore/**/*.py")])
SOURCES = [p for p in SOURCES if "examples" not in p.parts]

# layer -> the registry/blobstore modules it may import (prefixes)
ALLOWED = {
    "registry.domain": (
        "registry.domain",
        "registry.errors",
        "blobstore.digest",
        "blobstore.errors",
    ),
    "registry.errors": (),
    "blobstore": ("blobstore",),
    "registry.db": ("registry.db", "registry.domain", "registry.errors"),
    "registry.failpoints": (),
    "registry.settings": ("registry.domain",),
    "registry.services": (
        "registry.services",
        "registry.db",
        "registry.domain",
        "registry.errors",
        "registry.failpoints",
        "registry.settings",
        "blobstore",
    ),
}


ENV_READERS = {"environ", "environb", "getenv", "getenvb"}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {m for m in found if m.split(".")[0] in ("registry", "blobstore")}


def layer_of(module: str) -> str | None:
    for layer in sorted(ALLOWED, key=len, reverse=True):
        if module == layer or module.startswith(layer + "."):
            return layer
    return None


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down_the_layers(path):
    module = module_name(path)
    layer = layer_of(module)
    if layer is None:
        return  # assembly and entry points may import every layer below them
    for imported in project_imports(path):
        assert any(
            imported == allowed or imported.startswith(allowed + ".") for allowed in ALLOWED[layer]
        ), f"{module} ({layer}) imports {imported}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_only_the_settings_module_reads_the_environment(path):
    if module_name(path) == "registry.settings":
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            assert not (node.value.id == "os" and node.attr in ENV_READERS), ast.unparse(node)
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            assert not {a.name for a in node.names} & ENV_READERS


def test_the_layer_check_sees_every_layer():
    layers = {layer_of(module_name(p)) for p in SOURCES}
    assert set(ALLOWED) <= layers
