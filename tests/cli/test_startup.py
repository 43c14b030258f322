"""Starting `skillreg` imports only what the command needs (registry/cli/main.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from registry.cli.main import LAZY_COMMANDS, load_command

# Run in a fresh interpreter: the test session has imported everything already.
PROBE = """
import sys
from registry.cli.main import cli
try:
    cli([{args}], prog_name="skillreg")
except SystemExit:
    pass
heavy = [m for m in ("sqlalchemy", "sqlalchemy.ext.asyncio", "registry.api", "pydantic",
                     "rich", "registry.cli.packages", "registry.settings") if m in sys.modules]
print("heavy:", heavy, file=sys.stderr)
"""


@pytest.mark.parametrize("args", ["'--help'", "'--version'"])
def test_help_and_version_import_neither_the_api_nor_the_database(args: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stderr.strip().splitlines()[-1] == "heavy: []"


def test_the_root_help_lines_are_the_commands_own() -> None:
    for name, (_module, line) in LAZY_COMMANDS.items():
        assert load_command(name).get_short_help_str(limit=1000) == line, name


# What `list` must not import: the services it does not call, Alembic (the schema check
# reads the scripts, registry/db/revision.py), the PostgreSQL driver on SQLite, the
# frontmatter parser. A module loaded lazily (registry/lazy.py) is in `sys.modules` before
# its code runs, as an instance of a subclass of `ModuleType` until then.
LIST_PROBE = """
import sys
from types import ModuleType
from registry.cli.main import cli
try:
    cli(["list", "-w", "acme"], prog_name="skillreg")
except SystemExit:
    pass
names = ("alembic", "psycopg", "strictyaml", "registry.api.marketplace", "registry.api.gc",
         "registry.services.marketplace.install", "registry.services.write.publish",
         "registry.services.history.versions", "registry.services.materialize.reconcile")
ran = [n for n in names if n in sys.modules and type(sys.modules[n]) is ModuleType]
print("imported:", ran, file=sys.stderr)
"""


def test_list_imports_what_a_listing_needs_and_no_more(embedded) -> None:
    subprocess.run(
        [sys.executable, "-c", "from registry.cli.main import main; main()", "init"],
        check=True,
        capture_output=True,
    )
    result = subprocess.run(
        [sys.executable, "-c", LIST_PROBE], capture_output=True, text=True, check=True
    )
    assert "workspace 'acme' not found" in result.stderr  # it ran, and read the database
    assert result.stderr.strip().splitlines()[-1] == "imported: []"
