"""Starting `skillreg` imports only what the command needs (registry/cli/main.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from registry.cli.main import LAZY_COMMANDS, load_command
from tests.support.cli import run, run_json

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
# frontmatter parser, cryptography (the signing key is loaded by the first write), tenacity
# (only a transaction that failed transiently retries). A module loaded lazily
# (registry/lazy.py) is in `sys.modules` before its code runs, as an instance of a subclass
# of `ModuleType` until then. The probe runs the console script (`main()`),
# noting whether the garbage collector runs while the command's modules are imported (it
# must not) and when the command opens the registry (it must, for a long-running command).
# Then `serve`, on an address it cannot listen on: it must try to listen before it
# imports the web stack (a client that connects meanwhile waits, instead of retrying).
LIST_PROBE = """
import gc, socket, sys
from types import ModuleType
import registry.cli.common as common
import registry.cli.main as cli_main
collector = []
load_command, open_registry = cli_main.load_command, common.CliState.open
def loading(name):
    collector.append(("load", gc.isenabled()))
    return load_command(name)
def opening(self, **options):
    collector.append(("open", gc.isenabled()))
    return open_registry(self, **options)
cli_main.load_command, common.CliState.open = loading, opening
def create_server(*args, **kwargs):
    collector.append(("listen", "fastapi" in sys.modules))
    raise OSError(98, "address in use")
socket.create_server = create_server
def run(*args):
    sys.argv = ["skillreg", *args]
    try:
        cli_main.main()
    except SystemExit as exc:
        return exc.code
names = ("alembic", "psycopg", "strictyaml", "registry.api.marketplace", "registry.api.gc",
         "registry.services.marketplace.install", "registry.services.write.publish",
         "registry.services.history.versions", "registry.services.materialize.reconcile",
         "cryptography", "tenacity")
print("exit:", run("list", "-w", "acme"), file=sys.stderr)
ran = [n for n in names if n in sys.modules and type(sys.modules[n]) is ModuleType]
print("imported:", ran, file=sys.stderr)
print("serve:", run("serve", "--port", "1"), collector, file=sys.stderr)
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
    lines = result.stderr.strip().splitlines()
    assert "workspace 'acme' not found" in lines[0]  # it ran, and read the database
    assert lines[1:3] == ["exit: 5", "imported: []"]
    assert lines[3] == "error: cannot listen on 127.0.0.1:1: Address already in use"
    assert lines[4:] == [
        "serve: 6 [('load', False), ('open', True), ('load', False), ('listen', False)]"
    ]


def test_a_damaged_key_fails_writes_and_serve_but_no_read(embedded, monkeypatch) -> None:
    # The key is loaded when first needed (registry/services/signing.py's `Signing`): a
    # read never reads it, a write and `serve` (which loads it as it starts) are refused.
    def serving(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("serve built its server before it loaded the key")  # no hang

    monkeypatch.setattr("registry.http.server.server_for", serving)
    run("init")
    run("demo", "-w", "acme")
    (embedded / ".skillreg" / "signing-key.pem").write_text("not a key\n", encoding="utf-8")
    assert "pdf-report" in run("list", "-w", "acme")
    assert "pdf-report" in run("history", "acme/pdf-report")
    for args in (["demo", "-w", "globex"], ["serve", "--port", "0"]):
        refused = run_json(*args, code=6)
        assert refused["error"] == "signing_key_unavailable", args
