"""The lock: uv.lock pins what pyproject.toml ranges, deploy/requirements.txt is its export.

`make lint` runs the authoritative checks with uv itself (`uv lock --check`, and the export
compared with deploy/requirements.txt). These read the same files without uv, so that the
suite also fails on a stale lock: the lock records the requirements it was made from, and
they must be pyproject.toml's; the container's requirements pin exactly the lock's
versions, each with its hashes; the Makefile bootstraps the uv that pyproject.toml requires.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
LOCK = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
LOCKED = {package["name"]: package for package in LOCK["package"]}
PROJECT = LOCKED["skill-registry"]

Key = tuple[str, frozenset[str], str, str | None]
"""A requirement as both files can say it: name, extras, version specifier, extra group."""


def _pyproject_requirements() -> set[Key]:
    project = PYPROJECT["project"]
    groups = [(None, project["dependencies"])]
    groups += list(project["optional-dependencies"].items())
    keys = set()
    for group, requirements in groups:
        for text in requirements:
            requirement = Requirement(text)
            keys.add(
                (
                    canonicalize_name(requirement.name),
                    frozenset(requirement.extras),
                    str(requirement.specifier),
                    group,
                )
            )
    return keys


def _locked_requirements() -> set[Key]:
    keys = set()
    for entry in PROJECT["metadata"]["requires-dist"]:
        extra = re.search(r"extra == '([^']+)'", entry.get("marker", ""))
        keys.add(
            (
                canonicalize_name(entry["name"]),
                frozenset(entry.get("extras", ())),
                str(Requirement(f"x{entry.get('specifier', '')}").specifier),
                extra.group(1) if extra else None,
            )
        )
    return keys


def test_the_lock_was_made_from_pyprojects_requirements():
    assert _locked_requirements() == _pyproject_requirements(), "run `make lock`"
    assert set(PROJECT["metadata"]["provides-extras"]) == set(
        PYPROJECT["project"]["optional-dependencies"]
    )
    assert LOCK["requires-python"] == PYPROJECT["project"]["requires-python"]


def _runtime_closure() -> set[str]:
    """Every package the lock installs for the project without extras (any platform)."""
    seen: set[str] = set()
    todo = [(d["name"], tuple(d.get("extra", ()))) for d in PROJECT["dependencies"]]
    while todo:
        name, extras = todo.pop()
        package = LOCKED[name]
        edges = list(package.get("dependencies", ()))
        for extra in extras:
            edges += package.get("optional-dependencies", {}).get(extra, [])
        if name in seen and not extras:
            continue
        seen.add(name)
        todo += [(d["name"], tuple(d.get("extra", ()))) for d in edges]
    return seen


def test_the_container_requirements_pin_the_locked_runtime_with_hashes():
    text = (ROOT / "deploy" / "requirements.txt").read_text(encoding="utf-8")
    entries = re.split(r"\n(?=\S)", text.strip())
    pinned = {}
    for entry in entries:
        if entry.startswith("#"):
            continue
        match = re.match(r"([A-Za-z0-9._-]+)==(\S+)", entry)
        assert match, entry
        name, version = canonicalize_name(match[1]), match[2]
        assert "--hash=sha256:" in entry, name
        pinned[name] = version
    assert set(pinned) == _runtime_closure(), "run `make lock`"
    for name, version in pinned.items():
        assert LOCKED[name]["version"] == version, name


def test_the_makefile_and_the_dockerfile_use_the_uv_pyproject_requires():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    (version,) = re.findall(r"^UV_VERSION := (\S+)$", makefile, re.MULTILINE)
    assert PYPROJECT["tool"]["uv"]["required-version"] == f"=={version}"
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert re.findall(r"^ARG UV_VERSION=(\S+)$", dockerfile, re.MULTILINE) == [version]
