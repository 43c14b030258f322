"""A real `skillreg serve` process, for tests that must see what a deployment sees.

`running(env, cwd)` runs `skillreg init`, creates tokens with `skillreg token create`, starts
`skillreg serve --port 0`, waits for the address uvicorn announces, and stops the server
with SIGINT on the way out. The server's stdout (uvicorn's access log) and stderr (every
other log line) are kept in files, for tests that check what reaches the logs.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from registry import Registry

BIN = Path(sys.executable).parent
SKILLREG = str(BIN / "skillreg")
_ANNOUNCED = re.compile(r"running on (http://\S+)")


@dataclass
class Process:
    """A running `skillreg serve`: its address, tokens and log files."""

    url: str
    tokens: dict[tuple[str, str], str] = field(default_factory=dict)
    stdout: Path = Path()
    stderr: Path = Path()

    def token(self, role: str, workspace: str = "acme") -> str:
        return self.tokens[workspace, role]

    def logs(self) -> str:
        """Everything the server logged so far (access log and other lines)."""
        return self.stdout.read_text(errors="replace") + self.stderr.read_text(errors="replace")


def environment(database_url: str, blob_root: Path, **settings: str) -> dict[str, str]:
    """The test process's environment without its `SKILLREG_*` settings, plus these."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLREG_") and k != "CI"}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["SKILLREG_DATABASE_URL"] = database_url
    env["SKILLREG_BLOB_URL"] = blob_root.as_uri()
    env.update({f"SKILLREG_{k.upper()}": v for k, v in settings.items()})
    return env


async def _run(args: list[str], env: dict[str, str], cwd: Path) -> str:
    process = await asyncio.create_subprocess_exec(
        *args, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    assert process.returncode == 0, (args, out.decode(), err.decode())
    return out.decode()


@asynccontextmanager
async def running(
    env: dict[str, str], cwd: Path, *, roles: tuple[tuple[str, str], ...] = ()
) -> AsyncIterator[Process]:
    """`skillreg serve` in `cwd` with `env`, and a token per (workspace, role) in `roles`."""
    await _run([SKILLREG, "init"], env, cwd)
    # The tokens through the library, on the same database: the CLI's `token create` has
    # its own tests (tests/http/test_tokens.py), and a process per token made this slow.
    tokens = {}
    if roles:
        async with Registry.open(
            database_url=env["SKILLREG_DATABASE_URL"], blob_url=env["SKILLREG_BLOB_URL"]
        ) as registry:
            for workspace, role in roles:
                issued = await registry.tokens.create(workspace, role, actor="cli")
                tokens[workspace, role] = issued.token
    stdout, stderr = cwd / "serve.stdout", cwd / "serve.stderr"
    announced: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    with stdout.open("wb") as out_file, stderr.open("wb") as err_file:
        server = await asyncio.create_subprocess_exec(
            SKILLREG,
            "serve",
            "--port",
            "0",
            cwd=cwd,
            env=env,
            stdout=out_file,
            stderr=asyncio.subprocess.PIPE,
        )
        assert server.stderr is not None
        copier = asyncio.create_task(_copy(server.stderr, err_file, announced))
        try:
            async with asyncio.timeout(60):  # a hang guard for the start-up
                url = await announced
            yield Process(url, tokens, stdout, stderr)
        finally:
            if server.returncode is None:
                server.send_signal(signal.SIGINT)
            async with asyncio.timeout(30):
                await server.wait()
                await copier


async def _copy(
    stream: asyncio.StreamReader, into: BinaryIO, announced: asyncio.Future[str]
) -> None:
    """Copy the server's stderr into a file, line by line; resolve `announced` with its URL."""
    while line := await stream.readline():
        into.write(line)
        into.flush()
        found = _ANNOUNCED.search(line.decode(errors="replace"))
        if found and not announced.done():
            announced.set_result(found.group(1))
    if not announced.done():
        announced.set_exception(AssertionError("skillreg serve exited before it served"))
