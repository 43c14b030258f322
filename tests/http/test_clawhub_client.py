"""The real `clawhub` client (npm clawhub 0.23.3 on Node 22) against the ClawHub-compatible API.

From an empty folder, as a user runs it (`--registry <url>/clawhub`): search, inspect,
install, list, install of another version, update after a new version was published,
update refused on a locally edited copy and applied with `--force`, pin then an update
that skips it; then `login --token` and `publish` of a folder, which appears as the
listing's next version, recorded under the token. Every installed file is byte for byte
the registry's package. The client is installed once into `.venv/node/`
(tests/harness/clawhub_cli.py); without npm the test is skipped, except on CI.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path

import pytest

from registry.domain.model import PackageFile, Scope
from registry.settings import Settings
from tests.harness.clawhub_cli import ClawhubCli, ensure_clawhub_cli
from tests.harness.skills_cli import ToolUnavailable

pytestmark = pytest.mark.slow

PDF_V1 = {
    "SKILL.md": b"---\nname: pdf-report\ndescription: Builds PDF reports from tables.\n---\n\n"
    b"# pdf-report\n\nRun scripts/run.py.\n",
    "scripts/run.py": b"print('v1')\n",
    "references/Layout.md": b"# Layout\n",
}
CSV_V1 = {
    "SKILL.md": b"---\nname: csv-clean\ndescription: Cleans CSV files before import.\n---\n\n"
    b"# csv-clean\n",
}


def _with(files: dict[str, bytes], **changes: bytes) -> dict[str, bytes]:
    return {**files, **{path.replace("__", "/"): data for path, data in changes.items()}}


@pytest.fixture(scope="session")
def clawhub_cli() -> ClawhubCli:
    try:
        return ensure_clawhub_cli()
    except ToolUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(str(exc))


def _tree(folder: Path) -> dict[str, bytes]:
    """The files the client installed, less its own bookkeeping (`.clawhub/`)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".clawhub" not in p.relative_to(folder).parts
    }


class Client:
    def __init__(self, cli: ClawhubCli, registry: str, tmp_path: Path) -> None:
        self.cli = cli
        self.registry = registry
        self.project = tmp_path / "project"
        self.project.mkdir()
        home = tmp_path / "home"
        home.mkdir()
        self.env = {
            "PATH": f"{cli.node.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(home),
            "CLAWHUB_CONFIG_PATH": str(home / "clawhub.json"),
            "CLAWHUB_DISABLE_TELEMETRY": "1",
            "NO_COLOR": "1",
            # Node 22 caches the client's compiled modules: each start is a second cheaper.
            "NODE_COMPILE_CACHE": str(cli.entry.parents[3] / "compile-cache"),
        }
        self.calls = 0

    async def __call__(self, *args: str, ok: bool = True) -> str:
        self.calls += 1
        command = [
            str(self.cli.node),
            str(self.cli.entry),
            "--registry",
            self.registry,
            "--workdir",
            str(self.project),
            "--no-input",
            *args,
        ]
        process = await asyncio.create_subprocess_exec(
            *command,
            cwd=self.project,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        async with asyncio.timeout(120):  # a hang guard, not a timing assertion
            out, _ = await process.communicate()
        text = out.decode(errors="replace")
        assert (process.returncode == 0) is ok, (args, text)
        return text

    def installed(self, slug: str) -> dict[str, bytes]:
        return _tree(self.project / "skills" / slug)

    def lock(self) -> dict[str, dict[str, object]]:
        lock = json.loads((self.project / ".clawhub" / "lock.json").read_text())
        skills: dict[str, dict[str, object]] = lock["skills"]
        return skills


async def test_the_clawhub_client_installs_updates_and_publishes(serve, clawhub_cli, tmp_path):
    served = await serve(settings=Settings(clawhub="public"), socket=True)
    reg = served.registry
    market = reg.marketplace

    async def listing(slug: str, files: dict[str, bytes], message: str) -> int:
        package = {path: PackageFile(data) for path, data in files.items()}
        pub = await market.publish_listing(slug, package, actor="publisher", message=message)
        return pub.version

    async def package(slug: str, version: int | None = None) -> dict[str, bytes]:
        read = await market.read_listing(slug, version)
        return {path: f.data for path, f in read.files.items()}

    pdf_v2 = _with(PDF_V1, scripts__run_py=b"print('v2')\n")
    await listing("pdf-report", PDF_V1, "first")
    await listing("pdf-report", pdf_v2, "second")
    await listing("csv-clean", CSV_V1, "first")
    client = Client(clawhub_cli, f"{served.url}/clawhub", tmp_path)

    found = await client("search", "pdf")
    assert "pdf-report v2.0.0" in found
    assert "@catalog" in found
    assert "csv-clean" not in found

    shown = await client("inspect", "pdf-report", "--versions", "--files")
    assert "Builds PDF reports from tables." in shown
    assert "1.0.0" in shown
    assert "second" in shown
    run_sha = hashlib.sha256(pdf_v2["scripts/run.py"]).hexdigest()
    assert f"scripts/run.py  {len(pdf_v2['scripts/run.py'])}B  {run_sha}" in shown

    # Install the newest, then another version over it.
    assert "Installed pdf-report v2.0.0" in await client("install", "pdf-report")
    assert client.installed("pdf-report") == await package("pdf-report", 2) == pdf_v2
    await client("install", "pdf-report", "--version", "1.0.0", "--force")
    assert client.installed("pdf-report") == await package("pdf-report", 1) == PDF_V1
    await client("install", "csv-clean")
    assert client.installed("csv-clean") == CSV_V1
    listed = await client("list")
    assert "pdf-report  1.0.0" in listed
    assert "csv-clean  1.0.0" in listed

    # A new version: update takes it.
    pdf_v3 = _with(pdf_v2, scripts__run_py=b"print('v3')\n", assets__logo_svg=b"<svg/>\n")
    assert await listing("pdf-report", pdf_v3, "third") == 3
    assert "Updated pdf-report -> v3.0.0" in await client("update", "pdf-report")
    assert client.installed("pdf-report") == await package("pdf-report", 3)
    assert client.lock()["pdf-report"]["version"] == "3.0.0"

    # A local edit matches no version: refused without --force, overwritten with it.
    edited = client.project / "skills" / "pdf-report" / "SKILL.md"
    edited.write_bytes(edited.read_bytes() + b"\nmy own note\n")
    refused = await client("update", "pdf-report")
    assert "local changes (no match)" in refused
    assert b"my own note" in edited.read_bytes()
    await client("update", "pdf-report", "--force")
    assert client.installed("pdf-report") == pdf_v3

    # A pinned skill is skipped by `update --all`; the others are checked.
    await client("pin", "csv-clean")
    await listing("csv-clean", _with(CSV_V1, notes_md=b"new\n"), "second")
    skipped = await client("update", "--all")
    assert "Skipped 1 pinned skill: csv-clean" in skipped
    assert client.installed("csv-clean") == CSV_V1
    assert client.calls <= 12


async def test_the_clawhub_client_publishes_a_folder_as_the_next_version(
    serve, clawhub_cli, tmp_path
):
    served = await serve(settings=Settings(clawhub="public"), socket=True)
    reg = served.registry
    market = reg.marketplace
    package = {path: PackageFile(data) for path, data in PDF_V1.items()}
    await market.publish_listing("pdf-report", package, actor="publisher", message="first")
    client = Client(clawhub_cli, f"{served.url}/clawhub", tmp_path)

    issued = await reg.tokens.create("catalog", "write", name="clawhub", actor="test")
    assert "Logged in as @catalog" in await client("login", "--token", issued.token)
    folder = tmp_path / "pdf-report"
    for path, data in _with(PDF_V1, scripts__run_py=b"print('v2')\n").items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
    published = await client("publish", str(folder), "--changelog", "from clawhub")
    assert "OK. Published pdf-report@1.0.1 (pdf-report@2.0.0)" in published
    history = await reg.history(Scope(reg.settings.catalog_workspace), "pdf-report", limit=1)
    newest = history.items[0]
    assert (newest.number, newest.message) == (2, "from clawhub")
    assert newest.principal == f"token:{issued.info.id}"
    assert newest.sources == ["clawhub:version:1.0.1"]
    verified = await reg.trust.verify(Scope(reg.settings.catalog_workspace), "pdf-report", 2)
    assert verified.predicate["principal"] == f"token:{issued.info.id}"
    assert {
        p: f.data for p, f in (await market.read_listing("pdf-report", 2)).files.items()
    } == _tree(folder)
    # The same folder again is recognised by its fingerprint: nothing is published.
    assert "pdf-report@2.0.0 is already published" in await client("publish", str(folder))
    assert client.calls == 3
