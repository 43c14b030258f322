"""What starting `skillreg` costs: CPU time of `--help`, `--version`, `list`, `show`, `history`.

Each command runs in a fresh interpreter (a subprocess), the way a person or a script runs
it; its CPU time (user + system) is read from `resource.getrusage(RUSAGE_CHILDREN)` around
the run. The reference is `python -c pass` in the same loop, so the figure that carries is
the ratio; the absolute times are printed too, since the goals are stated in seconds
(`--help` at most 0.15 s, `list` on a small registry at most 0.35 s).

`list`, `show` and `history` run on the embedded default (SQLite, a local blob store)
holding the bundled examples. Their floor is measured in the same loop: a fresh
interpreter that only imports what any listing needs (SQLAlchemy's asyncio layer with
aiosqlite, pydantic-settings for the settings, click and rich for the command line). The
children run with their bytecode cached, as an installed `skillreg` does:
`PYTHONDONTWRITEBYTECODE` is removed from their environment and a first untimed run
writes the caches.

`skillreg serve` is timed by the clock, as a client waits for it: from the start of the
process until its socket listens (a client that connects is then answered, not refused),
and until it answers `GET /healthz`. A page of the documentation starts a server and
reaches it with `curl --retry-connrefused`, which waits 1, 2, 4... seconds after each
refusal: the first figure decides how long such a client waits on top of the second.
"""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import Result, Run, compare, scenario

PYTHON = sys.executable
SKILLREG = str(Path(sys.executable).with_name("skillreg"))


def _cpu_of(argv: list[str], env: dict[str, str]) -> float:
    """The CPU seconds (user + system) one run of `argv` took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@scenario("startup", "Start-up: CPU time of --help, --version, list, show, history; serve")
async def startup(run: Run) -> Result:
    return await asyncio.to_thread(_measure, run)


def _measure(run: Run) -> Result:
    home = run.scratch / "startup"
    home.mkdir(parents=True, exist_ok=True)
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "SKILLREG_DATABASE_URL": f"sqlite+aiosqlite:///{home / 'registry.db'}",
        "SKILLREG_BLOB_URL": (home / "blobs").as_uri(),
    }
    subprocess.run([SKILLREG, "init"], env=env, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(  # the bundled examples: a small registry to list
        [SKILLREG, "demo", "--workspace", "demo"], env=env, check=True, stdout=subprocess.DEVNULL
    )
    commands = {
        "--help": [SKILLREG, "--help"],
        "--version": [SKILLREG, "--version"],
        "list": [SKILLREG, "list", "-w", "demo"],
        "show": [SKILLREG, "show", "demo/pdf-report"],
        "history": [SKILLREG, "history", "demo/pdf-report"],
    }
    references = {"python -c pass": [PYTHON, "-c", "pass"], "floor": [PYTHON, "-c", FLOOR]}
    for argv in [*commands.values(), *references.values()]:  # bytecode caches written
        _cpu_of(argv, env)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    measured: dict[str, list[float]] = {name: [] for name in references}
    for _ in range(run.reps(10, quick=2)):
        for name, argv in references.items():
            measured[name].append(_cpu_of(argv, env))
        for name, argv in commands.items():
            samples[name].append(_cpu_of(argv, env))
    comparisons = [
        compare({"command": f"skillreg {name}"}, samples[name], measured) for name in commands
    ]
    floor = compare({}, measured["floor"], {})["subject"]["median"]
    print(f"  floor, the imports any listing needs: {floor:.3f} s CPU")
    for figure in comparisons:
        print(  # the figures, as the run goes
            f"  {figure['case']['command']:<18} {figure['subject']['median']:.3f} s CPU "
            f"({figure['ratios']['python -c pass']:.1f}x python -c pass, "
            f"{figure['references']['python -c pass']['median']:.3f} s; "
            f"{figure['ratios']['floor']:.2f}x the floor)"
        )
    listening: list[float] = []
    answering: list[float] = []
    for _ in range(run.reps(5, quick=1)):
        listened, answered = _serve_once(env, home)
        listening.append(listened)
        answering.append(answered)
    served = compare({"command": "skillreg serve, answering"}, answering, {})
    served["listening"] = compare({}, listening, {})["subject"]
    print(  # the figures, as the run goes
        f"  skillreg serve     listening after {served['listening']['median']:.2f} s, "
        f"answering after {served['subject']['median']:.2f} s (wall clock)"
    )
    return {"comparisons": comparisons, "serve": served}


def _serve_once(env: dict[str, str], home: Path) -> tuple[float, float]:
    """Seconds from starting `skillreg serve` until it listens, and until it answers."""
    with socket.socket() as probe:  # a free port, for the server to take
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [SKILLREG, "serve", "--port", str(port), "--no-jobs"]
    start = time.perf_counter()
    server = subprocess.Popen(
        argv, env=env, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    listened = None
    try:
        while True:
            try:
                connection = socket.create_connection(("127.0.0.1", port), timeout=60)
            except ConnectionRefusedError:
                if server.poll() is not None:
                    msg = f"skillreg serve exited with {server.returncode}"
                    raise RuntimeError(msg) from None
                time.sleep(0.01)
                continue
            listened = time.perf_counter() - start
            with connection:
                connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n")
                if not connection.recv(64).startswith(b"HTTP/1.1 200"):
                    msg = "skillreg serve did not answer 200"
                    raise RuntimeError(msg)
            return listened, time.perf_counter() - start
    finally:
        server.terminate()
        server.wait()


# What any `skillreg list` must import, whatever the registry's code: the floor under it.
FLOOR = "import sqlalchemy.ext.asyncio, aiosqlite, pydantic_settings, click, rich.console"
