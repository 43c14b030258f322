"""The import rules of docs/architecture.md, checked on the source.

Three rules: layers point down (domain <- db <- services <- entry points); a capability
under `registry/services/` imports another only through the modules meant to be shared;
and no module imports itself back through any chain (no import cycles).
"""

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
    "registry.errors": ("registry.errors",),
    "blobstore": ("blobstore",),
    "registry.db": ("registry.db", "registry.domain", "registry.errors"),
    "registry.failpoints": (),
    "registry.wire": ("registry.domain",),
    "registry.settings": ("registry.domain",),
    "registry.services": (
        "registry.services",
        "registry.db",
        "registry.domain",
        "registry.errors",
        "registry.failpoints",
        "registry.settings",
        "registry.wire",
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


# capability -> the modules of other capabilities it may import. Every capability may use
# `registry.services.context` and `registry.services.read`, which belong to none.
SHARED = {
    "write": (),
    "history": (
        "registry.services.write.content",
        "registry.services.write.diversion",
        "registry.services.write.edit",
        "registry.services.write.pending",
        "registry.services.write.publish",
        "registry.services.write.request",
        "registry.services.write.restore",
        "registry.services.write.suppression",
    ),
    "materialize": ("registry.services.write.publish", "registry.services.write.request"),
    "gc": (),
    "marketplace": (
        "registry.services.write.content",
        "registry.services.write.publish",
        "registry.services.write.request",
        "registry.services.materialize.folder",
    ),
    "ops": ("registry.services.gc.figures",),
    "discovery": (),
    "search": (),
}
SERVICES = "registry.services."


def capability_of(module: str) -> str | None:
    if not module.startswith(SERVICES):
        return None
    head = module[len(SERVICES) :].split(".", maxsplit=1)[0]
    return head if head in SHARED else None


@pytest.mark.parametrize(
    "path",
    [p for p in SOURCES if capability_of(module_name(p))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_capabilities_import_each_other_only_through_shared_modules(path):
    capability = capability_of(module_name(path))
    for imported in resolved_imports(path):
        other = capability_of(imported)
        if other is None or other == capability:
            continue
        assert imported in SHARED[capability], (
            f"{module_name(path)} ({capability}) imports {imported} ({other}); "
            f"{capability} may import only {SHARED[capability] or 'nothing'} of the others"
        )


def test_every_capability_folder_is_known():
    folders = {p.parent.name for p in ROOT.glob("registry/services/*/__init__.py")}
    assert folders == set(SHARED)


def resolved_imports(path: Path) -> set[str]:
    """The project modules `path` imports, `from pkg import mod` resolved to `pkg.mod`.

    Imports inside functions and under `TYPE_CHECKING` count: a cycle hidden in either is
    still a design cycle.
    """
    modules = {module_name(p) for p in SOURCES}
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in modules else node.module)
    return {m for m in found if m in modules}


def test_there_is_no_import_cycle():
    graph = {module_name(p): resolved_imports(p) for p in SOURCES}
    # A package's __init__ that re-exports its modules is not a cycle with them.
    for module, imported in graph.items():
        graph[module] = {m for m in imported if not module.startswith(m + ".")}
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> None:
        if module in path:
            cycle = [*path[path.index(module) :], module]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        if module in done:
            return
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            visit(imported)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)


def test_the_layer_check_sees_every_layer():
    layers = {layer_of(module_name(p)) for p in SOURCES}
    assert set(ALLOWED) <= layers
