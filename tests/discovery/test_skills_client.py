"""The real client: `npx skills add` installs from `skillreg serve`, byte for byte.

The npm `skills` CLI (1.6.0, tests/harness/skills_cli.py) reads the host's
`/.well-known/agent-skills/index.json`, downloads each entry's artifact, checks its
SHA-256 against the entry's digest, and writes the skill into `.claude/skills/<name>/`
of an empty project, recording what it installed in `skills-lock.json`. Both entry types
are covered: a `SKILL.md`-only skill and an archive with a script, a nested folder and a
non-ASCII file name. The registry runs as a user runs it: `skillreg serve` in its own
process, on the embedded default (SQLite) and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import signal
import sys
from pathlib import Path

import httpx
import pytest

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


@pytest.fixture
def environment(database_url, tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLREG_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    if database_url.startswith("postgresql"):
        env["SKILLREG_DATABASE_URL"] = database_url
        env["SKILLREG_BLOB_URL"] = f"file://{tmp_path / 'blobs'}"
    return env


async def test_skills_add_installs_both_kinds_byte_for_byte(skills_cli, environment, tmp_path):
    node = shutil.which("node")
    assert node is not None
    work = tmp_path / "registry"
    work.mkdir()
    skillreg = str(BIN / "skillreg")
    await _run([skillreg, "init"], environment, work)
    for slug, files in SKILLS.items():
        _write(work / slug, files)
        await _run([skillreg, "publish", slug, "-w", "acme"], environment, work)
    await _run(
        [skillreg, "discovery", "publish", "-w", "acme", "--all", "--public"], environment, work
    )

    log = (tmp_path / "serve.log").open("wb")
    server = await asyncio.create_subprocess_exec(
        *(skillreg, "serve", "--port", "0", "--no-jobs"),
        cwd=work,
        env={**environment, "SKILLREG_DISCOVERY_ROOT": "acme"},
        stdout=log,
        stderr=asyncio.subprocess.PIPE,
    )
    assert server.stderr is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(60):  # a hang guard for the start-up
            while not (found := re.search(r"running on (http://\S+)", lines[-1] if lines else "")):
                line = (await server.stderr.readline()).decode()
                assert line, f"skillreg serve exited: {''.join(lines)}"
                lines.append(line)
        url = found.group(1)
        async with httpx.AsyncClient() as client:
            index = (await client.get(f"{url}/.well-known/agent-skills/index.json")).json()
        project = tmp_path / "project"
        home = tmp_path / "home"
        project.mkdir()
        home.mkdir()
        client_env = {
            "PATH": environment["PATH"],
            "HOME": str(home),
            "DISABLE_TELEMETRY": "1",
            "DO_NOT_TRACK": "1",
        }
        output = await _run(
            [
                node,
                str(skills_cli),
                "add",
                url,
                "--skill",
                "*",
                "--agent",
                "claude-code",
                "-y",
                "--copy",
            ],
            client_env,
            project,
        )
    finally:
        server.send_signal(signal.SIGINT)
        lines.append((await server.stderr.read()).decode())
        await server.wait()
        log.close()
    assert "Traceback" not in "".join(lines), "".join(lines)

    installed = project / ".claude" / "skills"
    assert sorted(p.name for p in installed.iterdir()) == sorted(SKILLS), output
    for slug, files in SKILLS.items():
        assert _tree(installed / slug) == files, slug

    digests = {entry["name"]: entry["digest"] for entry in index["skills"]}
    assert {e["name"]: e["type"] for e in index["skills"]} == {
        "single": "skill-md",
        "multi": "archive",
    }
    lock = json.loads((project / "skills-lock.json").read_text())
    recorded = {name: entry["wellKnownDigest"] for name, entry in lock["skills"].items()}
    assert recorded == digests
    single = hashlib.sha256(SKILLS["single"]["SKILL.md"]).hexdigest()
    assert digests["single"] == f"sha256:{single}"

    # The client read the index, then exactly the artifacts it names (uvicorn's access log).
    requests = (tmp_path / "serve.log").read_text()
    assert '"GET /.well-known/agent-skills/index.json HTTP/1.1" 200' in requests
    for entry in index["skills"]:
        path = entry["url"].removeprefix("../..")
        assert f'"GET {path} HTTP/1.1" 200' in requests
