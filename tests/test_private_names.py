"""No private name of a dependency is used anywhere in the source (issue 38).

A private name (`_x`, not a dunder) is a dependency's implementation detail: nothing keeps
it from changing or disappearing in its next minor release, and a fresh install picks that
release up. This test reads the source of `registry/`, `blobstore/`, `bench/` and
`migrations/` (their syntax trees; nothing is imported) and fails on:

1. an import of a private module or name from outside the project:
   `import sqlalchemy.sql._y`, `from sqlalchemy._private import x`,
   `from psycopg import _queries`, `from sqlalchemy.x import _z`;
2. a private attribute reached through a name bound to an outside module or to something
   imported from one: `sa.sql._y`, `psycopg._queries`, `SQLiteDialect._x`;
3. a private attribute of `self`, `cls` or `super()` that the enclosing class does not
   define itself or inherit from a project class: `self._conn` in a subclass of
   `aiosqlite.Connection` reaches into aiosqlite;
4. any other private attribute access (`value._name`, and `getattr(value, "_name")`,
   `hasattr`, `setattr`, `delattr` with a literal name) unless `_name` is defined by the
   project's own code: a member of a project class (method, class attribute, `__slots__`
   entry, `self._name = ...` in a method, `setattr(self, "_name", ...)`), or, through a
   name bound to a project module (`from registry.db import publication`), a name defined
   at a module's top level.

Rule 4 is where an AST alone cannot know a value's type (`compiled._render_postcompile`,
`driver_connection._conn`): it assumes an attribute named like one the project defines is
the project's, and flags every other. A project name that shadows a dependency's private
one would hide a use of it; rules 1-3, which need no such assumption, catch the common
forms (a subclass's `self._x`, a module's `_x`).

`DOCUMENTED` lists the underscore names that are public by their library's documentation
(they carry the underscore so they cannot collide with a field or column name).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("registry", "blobstore", "bench", "migrations")
PROJECT = frozenset({*SCANNED, "tests"})

# Public API spelled with a leading underscore, each by its library's documentation.
DOCUMENTED = frozenset(
    {
        # collections.namedtuple:
        # https://docs.python.org/3/library/collections.html#collections.somenamedtuple._make
        "_make",
        "_asdict",
        "_replace",
        "_fields",
        "_field_defaults",
        # sqlalchemy.engine.Row (a named tuple):
        # https://docs.sqlalchemy.org/en/20/core/connections.html#sqlalchemy.engine.Row
        "_mapping",
        "_t",
        "_tuple",
    }
)
_REFLECTION = frozenset({"getattr", "hasattr", "setattr", "delattr"})


def is_private(name: str) -> bool:
    """`_x` and `__x`, not `__x__` (nor `_` alone)."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_outside(module: str) -> bool:
    """Whether `module` (absolute) belongs to a dependency or the standard library."""
    return module.split(".", maxsplit=1)[0] not in PROJECT


@dataclass
class ClassInfo:
    """A project class: the names it defines and the names of its bases."""

    members: set[str] = field(default_factory=set)
    bases: list[str] = field(default_factory=list)


@dataclass
class Project:
    """What the project's own code defines, read from every scanned file."""

    classes: dict[str, list[ClassInfo]] = field(default_factory=dict)
    members: set[str] = field(default_factory=set)  # of every project class
    module_names: set[str] = field(default_factory=set)  # defined at a module's top level

    def class_defines(self, class_name: str, name: str, seen: frozenset[str] = frozenset()) -> bool:
        """Whether project class `class_name` (or a project base of it) defines `name`."""
        if class_name in seen:
            return False
        for info in self.classes.get(class_name, []):
            if name in info.members:
                return True
            if any(
                self.class_defines(base, name, seen | {class_name})
                for base in info.bases
                if base in self.classes
            ):
                return True
        return False


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    if isinstance(node, ast.Subscript):  # `Generic[T]`
        return _dotted(node.value)
    return None


def _string_arg(call: ast.Call, index: int) -> str | None:
    if len(call.args) > index:
        arg = call.args[index]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value
    return None


def _class_members(node: ast.ClassDef) -> set[str]:
    """What the class body defines, and what its methods assign on `self` or `cls`."""
    return _body_members(node) | _assigned_members(node)


def _body_members(node: ast.ClassDef) -> set[str]:
    members: set[str] = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            members.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            members.add(item.target.id)
        elif isinstance(item, ast.Assign):
            names = {t.id for t in item.targets if isinstance(t, ast.Name)}
            members |= names
            if "__slots__" in names:
                members.update(
                    c.value
                    for c in ast.walk(item.value)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                )
    return members


def _assigned_members(node: ast.ClassDef) -> set[str]:
    """`self._x = ...` (or annotated, or augmented), `setattr(self, "_x", ...)`."""
    members: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
            members.update(
                part.attr
                for target in targets
                for part in ast.walk(target)
                if isinstance(part, ast.Attribute)
                and isinstance(part.value, ast.Name)
                and part.value.id in ("self", "cls")
            )
        elif isinstance(inner, ast.Call) and _dotted(inner.func) in (
            "setattr",
            "object.__setattr__",
        ):
            name = _string_arg(inner, 1)
            if name is not None:
                members.add(name)
    return members


def read_project(trees: dict[Path, ast.Module]) -> Project:
    """Pass 1: every module-level name and class member the project defines."""
    project = Project()
    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                project.module_names.add(node.name)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    project.module_names.update(
                        n.id for n in ast.walk(target) if isinstance(n, ast.Name)
                    )
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                project.module_names.add(node.target.id)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                info = ClassInfo(
                    members=_class_members(node),
                    bases=[b.rsplit(".", 1)[-1] for b in map(_dotted, node.bases) if b],
                )
                project.classes.setdefault(node.name, []).append(info)
                project.members.update(info.members)
    return project


@dataclass(frozen=True)
class Finding:
    line: int
    text: str
    rule: str

    def __str__(self) -> str:
        return f"{self.line}: {self.text} ({self.rule})"


class _Checker(ast.NodeVisitor):
    """Pass 2: the private names one module uses (`findings`)."""

    def __init__(self, project: Project, source: str) -> None:
        self.project = project
        self.source = source
        self.outside: set[str] = set()  # local names bound to something from outside
        self.modules: set[str] = set()  # local names bound to the project's modules
        self.classes: list[ast.ClassDef] = []
        self.findings: list[Finding] = []

    def _flag(self, node: ast.AST, rule: str) -> None:
        text = ast.get_source_segment(self.source, node) or ast.dump(node)
        self.findings.append(Finding(getattr(node, "lineno", 0), text.splitlines()[0], rule))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not is_outside(alias.name):
                self.modules.add(alias.asname or alias.name.split(".")[0])
                continue
            if any(is_private(part) for part in alias.name.split(".")):
                self._flag(node, "private module of a dependency")
            self.outside.add(alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or node.module is None or not is_outside(node.module):
            self.modules.update(alias.asname or alias.name for alias in node.names)
            return
        if any(is_private(part) for part in node.module.split(".")):
            self._flag(node, "private module of a dependency")
        for alias in node.names:
            if is_private(alias.name):
                self._flag(node, "private name of a dependency")
            self.outside.add(alias.asname or alias.name)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append(node)
        self.generic_visit(node)
        self.classes.pop()

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._check(node, node.value, node.attr)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in _REFLECTION and node.args:
            name = _string_arg(node, 1)
            if name is not None:
                self._check(node, node.args[0], name)
        self.generic_visit(node)

    def _check(self, node: ast.AST, base: ast.expr, name: str) -> None:
        if not is_private(name) or name in DOCUMENTED:
            return
        root = base
        while isinstance(root, ast.Attribute | ast.Subscript | ast.Call):
            root = root.func if isinstance(root, ast.Call) else root.value
        if isinstance(root, ast.Name) and root.id in self.outside:
            self._flag(node, "private attribute of a dependency's module or object")
            return
        own = (isinstance(base, ast.Name) and base.id in ("self", "cls")) or (
            isinstance(base, ast.Call) and _dotted(base.func) == "super"
        )
        if own and self.classes:
            if not self.project.class_defines(self.classes[-1].name, name):
                self._flag(node, "private attribute the class does not define: inherited?")
            return
        if isinstance(root, ast.Name) and root.id in self.modules:
            known = name in self.project.module_names or name in self.project.members
        else:  # a value: its attribute must be a member of a project class
            known = name in self.project.members
        if not known:
            self._flag(node, "private attribute the project does not define")


def check_source(source: str, project: Project | None = None) -> list[Finding]:
    """The private names of dependencies `source` uses (`project`: defaults to its own)."""
    tree = ast.parse(source)
    if project is None:
        project = read_project({Path("<source>"): tree})
    checker = _Checker(project, source)
    checker.visit(tree)
    return checker.findings


def _sources() -> Iterator[Path]:
    for top in SCANNED:
        yield from sorted((ROOT / top).rglob("*.py"))


def test_the_source_uses_no_private_name_of_a_dependency():
    paths = list(_sources())
    trees = {p: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in paths}
    project = read_project(trees)
    found = []
    for path in paths:
        checker = _Checker(project, path.read_text(encoding="utf-8"))
        checker.visit(trees[path])
        found += [f"{path.relative_to(ROOT)}:{f}" for f in checker.findings]
    assert found == [], "\n".join(found)


# ---------------------------------------------------------------- the checker itself


@pytest.mark.parametrize(
    "source",
    [
        "import sqlalchemy.sql._elements_constructors",
        "from sqlalchemy._private import thing",
        "from psycopg import _queries",
        "from sqlalchemy.sql.compiler import _CompileLabel",
        "import sqlalchemy as sa\nsa.sql._y",
        "import psycopg\npsycopg.pq._z",
        "from sqlalchemy import Table\nTable._autoincrement_column",
        "import aiosqlite\nclass C(aiosqlite.Connection):\n    def f(self):\n        self._conn",
        "import aiosqlite\nclass C(aiosqlite.Connection):\n    def f(self):\n        super()._x",
        "def f(compiled):\n    return compiled._render_postcompile",
        "def f(statement):\n    return statement._returning",
        "def f(c):\n    c._thread.daemon = True",
        "def _thread(): ...\ndef f(c):\n    c._thread.daemon = True",
        'def f(c):\n    return getattr(c, "_collected_params", None)',
    ],
)
def test_each_form_of_a_dependencys_private_name_is_found(source):
    assert check_source(source), source


@pytest.mark.parametrize(
    "source",
    [
        "class C:\n    def __init__(self):\n        self._x = 1\n    def f(self):\n        self._x",
        "class C:\n    __slots__ = ('_x',)\n    def f(self):\n        return self._x",
        "class B:\n    def _m(self): ...\nclass C(B):\n    def f(self):\n        self._m()",
        "def _helper(): ...\ndef f():\n    from registry import m\n    m._helper()",
        "def f(row):\n    return row._asdict(), row._mapping",
        "import collections\ncollections.namedtuple('R', 'a')._make",
        "_HEAD = 1\nfrom registry.db import publication\npublication._HEAD",
        (
            "class C:\n    def __init__(self):\n        object.__setattr__(self, '_gate', 1)\n"
            "    def f(self):\n        return self._gate"
        ),
        "import sqlalchemy as sa\nsa.__version__",
    ],
)
def test_the_projects_own_private_names_and_documented_ones_pass(source):
    assert check_source(source) == [], source


def test_the_standard_librarys_modules_are_outside_too():
    # `sys._getframe` is no dependency's, but it is as private.
    assert "sys" in sys.stdlib_module_names
    assert check_source("import sys\nsys._getframe()")
