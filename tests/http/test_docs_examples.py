"""The curl examples of docs/http.md, run against `skillreg serve` (both databases).

SQLite is the embedded default: `skillreg init` and `skillreg serve` in an empty folder,
with no configuration at all. Every `sh` block of the page runs, in order, in one bash
session, with the system's curl; the `http` block after an example gives its expected
status, a `text` block its exact output.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "http.md"
BIN = Path(sys.executable).parent
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass
class Example:
    index: int
    script: str
    expect_status: int | None = None
    expect_text: str | None = None


def examples(text: str) -> list[Example]:
    found: list[Example] = []
    for lang, body in ((m.group(1), m.group(2)) for m in _FENCE.finditer(text)):
        if lang == "sh":
            found.append(Example(len(found), body))
        elif lang == "http" and found and found[-1].expect_status is None:
            found[-1].expect_status = int(body.split()[1])
        elif lang == "text" and found and found[-1].expect_text is None:
            found[-1].expect_text = body
    return found


def test_the_page_has_examples_and_a_stale_if_match():
    found = examples(DOC.read_text(encoding="utf-8"))
    assert len(found) >= 10
    assert any(e.expect_status == 412 and "If-Match: $ETAG" in e.script for e in found)


async def run(args: list[str], env: dict[str, str], cwd: Path) -> str:
    process = await asyncio.create_subprocess_exec(
        *args, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    assert process.returncode == 0, (args, out.decode(), err.decode())
    return out.decode()


@pytest.fixture
def environment(database_url, tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLREG_") and k != "CI"}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    if database_url.startswith("postgresql"):
        env["SKILLREG_DATABASE_URL"] = database_url
        env["SKILLREG_BLOB_URL"] = f"file://{tmp_path / 'blobs'}"
    # SQLite: nothing set, the embedded default under ./.skillreg in the working folder.
    return env


async def run_examples(env: dict[str, str], work: Path, tmp_path: Path) -> None:
    """Run every `sh` block in one bash session; check each against its expectation."""
    found = examples(DOC.read_text(encoding="utf-8"))
    outputs = tmp_path / "out"
    outputs.mkdir()
    script = ["set -eo pipefail"]
    script += [f"{{\n{e.script}\n}} > {outputs / str(e.index)} 2>&1" for e in found]
    (tmp_path / "examples.sh").write_text("\n".join(script) + "\n", encoding="utf-8")
    process = await asyncio.create_subprocess_exec(
        "bash", str(tmp_path / "examples.sh"), cwd=work, env=env
    )
    code = await process.wait()
    ran = sorted(int(p.name) for p in outputs.iterdir())
    last = (outputs / str(ran[-1])).read_text() if ran else ""
    assert code == 0, f"example {ran[-1] if ran else 0} failed:\n{found[ran[-1]].script}\n{last}"
    wrong = []
    for example in found:
        out = (outputs / str(example.index)).read_text()
        if example.expect_status is not None:
            status = re.search(r"^HTTP/1\.1 (\d{3})", out, re.MULTILINE)
            if status is None or int(status.group(1)) != example.expect_status:
                wrong.append((example.script, example.expect_status, out[:500]))
        expected = example.expect_text
        if expected is not None and out.rstrip("\n") != expected.rstrip("\n"):
            wrong.append((example.script, expected, out[:500]))
    assert wrong == []


async def test_the_curl_examples_run(environment, tmp_path):
    assert shutil.which("curl"), "the examples need curl"
    work = tmp_path / "work"
    work.mkdir()
    skillreg = str(BIN / "skillreg")
    await run([skillreg, "init"], environment, work)

    async def token(role: str, workspace: str = "acme") -> str:
        out = await run(
            [skillreg, "token", "create", "-w", workspace, "-r", role, "--json"], environment, work
        )
        return json.loads(out)["token"]

    env = {
        **environment,
        "TOKEN": await token("owner"),
        "ADMIN_TOKEN": await token("admin"),
        "CATALOG_TOKEN": await token("write", "catalog"),
    }
    access_log = (tmp_path / "access.log").open("wb")
    server = await asyncio.create_subprocess_exec(
        *(skillreg, "serve", "--port", "0"),
        cwd=work,
        env=env,
        stdout=access_log,
        stderr=asyncio.subprocess.PIPE,
    )
    assert server.stderr is not None
    log: list[str] = []
    try:
        async with asyncio.timeout(60):  # a hang guard for the start-up
            while not (match := re.search(r"running on (http://\S+)", log[-1] if log else "")):
                line = (await server.stderr.readline()).decode()
                assert line, f"skillreg serve exited: {''.join(log)}"
                log.append(line)
        await run_examples({**env, "SKILLREG": match.group(1)}, work, tmp_path)
    finally:
        server.send_signal(signal.SIGINT)
        log.append((await server.stderr.read()).decode())
        await server.wait()
        access_log.close()
    assert server.returncode == 0  # SIGINT stops it gracefully
    assert "Traceback" not in "".join(log), "".join(log)
