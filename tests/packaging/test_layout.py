"""What the wheel is made of, checked without building it: the package list and the version.

pyproject.toml lists the packages (the migrations are mapped into `registry._migrations`,
which `packages.find` cannot do); a package folder missing from the list would be missing
from the wheel. The version is written once, `registry.__version__`; the changelog's newest
release names it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import registry

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_lists_every_package_folder_and_maps_the_migrations():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = config["tool"]["setuptools"]
    folders = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("registry", "blobstore")
        for init in (ROOT / top).rglob("__init__.py")
    }
    mapped = {"registry._migrations", "registry._migrations.versions"}
    assert set(setuptools["packages"]) == folders | mapped
    assert setuptools["package-dir"] == {"registry._migrations": "migrations"}
    assert (ROOT / "migrations" / "env.py").is_file()
    assert "script.py.mako" in setuptools["package-data"]["registry._migrations"]


def test_the_version_is_written_once_and_the_changelog_names_it():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" in config["project"]["dynamic"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "registry.__version__"}
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, re.MULTILINE)
    assert releases, "CHANGELOG.md has no release heading"
    assert releases[0] == registry.__version__
    assert changelog.index("## [Unreleased]") < changelog.index(f"## [{releases[0]}]")
