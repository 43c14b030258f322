"""The real client: `npx skills add` and `skills update` against `skillreg serve`.

The npm `skills` CLI (tests/harness/skills_cli.py) reads the host's
`/.well-known/agent-skills/index.json`, downloads each entry's artifact, checks its
SHA-256 against the entry's digest, and writes the skill into `.claude/skills/<name>/`
of an empty project, recording what it installed in `skills-lock.json`. Then a new
version is published and `skills update` compares the lock's digests with the index and
installs what changed. Both entry types are covered: a `SKILL.md`-only skill and an
archive with a script, a nested folder and a non-ASCII file name. The registry runs as a
user runs it: `skillreg serve` in its own process. Two clients: 1.6.0 (the machine's
Node 20) on PostgreSQL, and 1.7.4 (Node 22) on SQLite, which also installs
through the older layout (`/.well-known/skills/`) when a proxy hides the 0.2.0 index.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from tests.harness.skills_cli import SkillsCli
from tests.support.appserver import start

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
SKILLS = {
    "single": {"SKILL.md": b"---\nname: single\ndescription: One file only.\n---\n\n# single\n"},
    "multi": {
        "SKILL.md": b"---\nname: multi\ndescription: Several files.\n---\n\nRun scripts/run.py.\n",
        "scripts/run.py": b"print('multi')\n",
        "references/caf\xc3\xa9.md": "d\u00e9j\u00e0 vu\n".encode(),
        "assets/deep/data.json": b'{"rows": [1, 2, 3]}\n',
    },
}
# The second version of `multi`: a file changed, one added.
UPDATED = {
    **SKILLS["multi"],
    "scripts/run.py": b"print('multi, again')\n",
    "references/new.md": b"# new\n",
}


def _write(folder: Path, files: dict[str, bytes]) -> None:
    for path, data in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


async def _run(args: list[str], env: dict[str, str], cwd: Path) -> str:
    process = await asyncio.create_subprocess_exec(
        *args, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    async with asyncio.timeout(300):  # a hang guard, not a timing assertion
        out, _ = await process.communicate()
    assert process.returncode == 0, (args, out.decode(errors="replace"))
    return out.decode(errors="replace")


def _environment(database_url: str | None, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLREG_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    if database_url is not None and database_url.startswith("postgresql"):
        env["SKILLREG_DATABASE_URL"] = database_url
        env["SKILLREG_BLOB_URL"] = f"file://{tmp_path / 'blobs'}"
    return env


@asynccontextmanager
async def _registry(env: dict[str, str], tmp_path: Path) -> AsyncIterator[str]:
    """`skillreg serve` of a registry with SKILLS published at the root; its URL."""
    work = tmp_path / "registry"
    work.mkdir()
    skillreg = str(BIN / "skillreg")
    await _run([skillreg, "init"], env, work)
    for slug, files in SKILLS.items():
        _write(work / slug, files)
        await _run([skillreg, "publish", slug, "-w", "acme"], env, work)
    await _run([skillreg, "discovery", "publish", "-w", "acme", "--all", "--public"], env, work)
    log = (tmp_path / "serve.log").open("wb")
    server = await asyncio.create_subprocess_exec(
        *(skillreg, "serve", "--port", "0", "--no-jobs"),
        cwd=work,
        env={**env, "SKILLREG_DISCOVERY_ROOT": "acme"},
        stdout=log,
        stderr=asyncio.subprocess.PIPE,
    )
    assert server.stderr is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(120):  # a hang guard for the start-up
            while not (found := re.search(r"running on (http://\S+)", lines[-1] if lines else "")):
                line = (await server.stderr.readline()).decode()
                assert line, f"skillreg serve exited: {''.join(lines)}"
                lines.append(line)
        yield found.group(1)
    finally:
        server.send_signal(signal.SIGINT)
        lines.append((await server.stderr.read()).decode())
        await server.wait()
        log.close()
    assert "Traceback" not in "".join(lines), "".join(lines)


async def _publish(env: dict[str, str], tmp_path: Path, slug: str, files: dict[str, bytes]) -> None:
    work = tmp_path / "registry"
    _write(work / slug, files)
    await _run([str(BIN / "skillreg"), "publish", slug, "-w", "acme"], env, work)


class Client:
    """One `skills` client in an empty project, with its own home."""

    def __init__(self, cli: SkillsCli, env: dict[str, str], tmp_path: Path) -> None:
        self.cli = cli
        self.project = tmp_path / "project"
        home = tmp_path / "home"
        self.project.mkdir()
        home.mkdir()
        self.env = {
            "PATH": env["PATH"],
            "HOME": str(home),
            "DISABLE_TELEMETRY": "1",
            "DO_NOT_TRACK": "1",
        }

    async def __call__(self, *args: str) -> str:
        command = [str(self.cli.node), str(self.cli.entry), *args]
        return await _run(command, self.env, self.project)

    def installed(self) -> dict[str, dict[str, bytes]]:
        skills = self.project / ".claude" / "skills"
        return {p.name: _tree(p) for p in sorted(skills.iterdir())}

    def locked(self) -> dict[str, str]:
        lock = json.loads((self.project / "skills-lock.json").read_text())
        return {name: entry["wellKnownDigest"] for name, entry in lock["skills"].items()}


async def _served(url: str) -> tuple[dict[str, str], dict[str, str]]:
    """The index's digests by name, and those of the newest snapshot (versions.json)."""
    well_known = f"{url}/.well-known/agent-skills"
    async with httpx.AsyncClient() as client:
        index = (await client.get(f"{well_known}/index.json")).json()
        latest = (await client.get(f"{well_known}/versions.json")).json()["latest"]
        snapshot = (await client.get(f"{well_known}/v{latest}/index.json")).json()
    return (
        {e["name"]: e["digest"] for e in index["skills"]},
        {e["name"]: e["digest"] for e in snapshot["skills"]},
    )


async def _install_publish_update(cli: SkillsCli, env: dict[str, str], tmp_path: Path) -> None:
    client = Client(cli, env, tmp_path)
    async with _registry(env, tmp_path) as url:
        output = await client("add", url, "--skill", "*", "--agent", "claude-code", "-y", "--copy")
        assert client.installed() == SKILLS, output
        index, snapshot = await _served(url)
        assert client.locked() == index == snapshot
        single = hashlib.sha256(SKILLS["single"]["SKILL.md"]).hexdigest()
        assert index["single"] == f"sha256:{single}"

        await _publish(env, tmp_path, "multi", UPDATED)
        output = await client("update", "-y")
        assert client.installed() == {**SKILLS, "multi": UPDATED}, output
        updated, snapshot = await _served(url)
        assert updated["multi"] != index["multi"]
        assert client.locked() == updated == snapshot

    # The client read the index and the artifacts it names, and no file of the older
    # layout, whose index it asks for too (uvicorn's access log).
    requests = (tmp_path / "serve.log").read_text()
    assert '"GET /.well-known/agent-skills/index.json HTTP/1.1" 200' in requests
    assert re.search(r'"GET /\.well-known/skills/(?!index\.json)', requests) is None


@pytest.mark.postgres
async def test_skills_1_6_add_and_update(skills_cli_16, postgresql_url, tmp_path):
    # On PostgreSQL: 1.7.4 runs the same path on SQLite.
    await _install_publish_update(skills_cli_16, _environment(postgresql_url, tmp_path), tmp_path)


async def test_skills_1_7_add_and_update(skills_cli_17, tmp_path):
    await _install_publish_update(skills_cli_17, _environment(None, tmp_path), tmp_path)


@asynccontextmanager
async def _hiding_proxy(upstream: str, hidden: str) -> AsyncIterator[str]:
    """A proxy to `upstream` that answers 404 for the path `hidden`; its URL."""
    async with httpx.AsyncClient(base_url=upstream) as forward:

        async def app(scope, receive, send) -> None:
            if scope["type"] != "http":
                return
            status, headers, body = 404, [], b""
            if scope["path"] != hidden:
                upstream_response = await forward.request(
                    scope["method"], scope["raw_path"].decode(), params=scope["query_string"]
                )
                status, body = upstream_response.status_code, upstream_response.content
                headers = [
                    (k.encode(), v.encode())
                    for k, v in upstream_response.headers.items()
                    if k.lower() in {"content-type", "etag", "cache-control"}
                ]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        server, task, url = await start(app, lifespan="off")
        try:
            yield url
        finally:
            server.should_exit = True
            await task


def _legacy_digest(files: dict[str, bytes]) -> str:
    """The client's digest of a skill installed from the older layout (no digest served)."""
    hashed = hashlib.sha256()
    for path in sorted(files):
        hashed.update(path.encode() + b"\0" + files[path] + b"\0")
    return f"sha256:{hashed.hexdigest()}"


async def test_skills_1_7_falls_back_to_the_older_layout(skills_cli_17, tmp_path):
    env = _environment(None, tmp_path)
    client = Client(skills_cli_17, env, tmp_path)
    async with (
        _registry(env, tmp_path) as url,
        _hiding_proxy(url, "/.well-known/agent-skills/index.json") as proxy,
    ):
        output = await client(
            "add", proxy, "--skill", "*", "--agent", "claude-code", "-y", "--copy"
        )
    assert client.installed() == SKILLS, output
    assert client.locked() == {name: _legacy_digest(files) for name, files in SKILLS.items()}
    requests = (tmp_path / "serve.log").read_text()
    assert '"GET /.well-known/skills/index.json HTTP/1.1" 200' in requests
    for name, files in SKILLS.items():
        for path in files:
            quoted = httpx.URL(f"/.well-known/skills/{name}/{path}").raw_path.decode()
            assert f'"GET {quoted} HTTP/1.1" 200' in requests, path
