"""Revocation reaches every host: 100 watching hosts, one yank, the time until none holds it.

The registry is served over HTTP on loopback (uvicorn, in the bench process) with a request
counter in front of it. The hosts are `Sync.watch` loops, each with its own target (its own
target id), run as tasks of one other process so that they do not share the registry's
event loop. Every host follows one workspace with a few skills; once all hold version 1 of
`hot` and then version 2, published after (the update a revocation takes back), the bench
counts the registry's requests over a steady window, yanks version 2 (the head moves back
to version 1's package, as version 3), and watches the targets' disks: a host has
converged when its `hot/SKILL.md` is no longer the revoked version's. Figures: each host's
time to converge after the yank, the time until all have, against the watch interval (the
goal: at most one interval + 1 s), and the registry's request rate while they converge
beside its steady rate, with the CPU the registry's and the hosts' processes spent.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from bench.content import KiB, package
from bench.harness import Result, Run, scenario, stats
from bench.services import SQLITE_LOCAL
from registry.client import Sync
from registry.client.sync import Backoff
from registry.client.trust import TrustRoot
from registry.domain.attestation import key_id
from registry.domain.model import ANY, Scope
from registry.http.app import create_app

SCOPE = Scope("fleet")
HOT = "hot"
_POLL = 0.02  # how often the bench looks at the targets' disks (seconds)


class _Counted:
    """An ASGI wrapper that records (time, method, route kind, status) of every request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[float, str, str, int]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status: list[int] = []

        async def counted(message: Any) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, counted)
        finally:
            kind = _kind(scope["method"], scope["path"])
            self.seen.append(
                (time.perf_counter(), scope["method"], kind, status[0] if status else 0)
            )


def _kind(method: str, path: str) -> str:
    for part, name in (
        ("/desired", "desired"),
        ("/blobs/", "blob"),
        ("/attestation", "attestation"),
        ("/trust", "trust report"),
        ("/skills/", "record"),
        ("/targets/", "register"),
        ("/keys", "keys"),
    ):
        if part in path:
            return name if method == "GET" or part != "/skills/" else "record"
    return "other"


@dataclass(frozen=True)
class _Fleet:
    """What the hosts' process is given (picklable: the key travels as hex)."""

    url: str
    token: str
    key_hex: str
    root: Path
    count: int
    interval: float
    stop: Path


def _hosts(fleet: _Fleet) -> None:
    """The hosts' process: `count` watch loops until the file `stop` appears."""
    asyncio.run(_watch_all(fleet))


async def _watch_all(fleet: _Fleet) -> None:
    url, token, root, interval = fleet.url, fleet.token, fleet.root, fleet.interval
    public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(fleet.key_hex))
    trust = TrustRoot(keys={key_id(public): public})
    errors: Counter[str] = Counter()

    async def host(number: int) -> None:
        target = root / f"host-{number:03d}"
        async with Sync(url, token, SCOPE, target, trust=trust) as syncer:
            await syncer.watch(
                backoff=Backoff(interval=interval, first=0.5, cap=interval),
                on_report=lambda _: None,
                on_error=lambda exc, _: errors.update([type(exc).__name__]),
            )

    tasks = [asyncio.create_task(host(n)) for n in range(fleet.count)]
    # The bench process says stop with a file: nothing of another process can be awaited.
    while not await asyncio.to_thread(fleet.stop.exists):  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    (root / "errors.json").write_text(json.dumps(dict(errors)))


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used so far (Linux's `/proc`)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _holds(target: Path, revoked: bytes) -> bool:
    try:
        return (target / HOT / "SKILL.md").read_bytes() == revoked
    except OSError:
        return False


async def _until(condition: Any, within: float) -> None:
    deadline = time.perf_counter() + within
    while not condition():
        if time.perf_counter() > deadline:
            raise AssertionError("the hosts did not get there in time")
        await asyncio.sleep(_POLL)


class _Window:
    """The registry's requests and the CPU of each process, from its creation to `end()`.

    The registry's process (this one) also runs the bench's look at the targets' disks.
    """

    def __init__(self, seen: list[tuple[float, str, str, int]], hosts: int) -> None:
        self.seen, self.hosts = seen, hosts
        self.start = time.perf_counter()
        self.cpu = (_cpu(os.getpid()), _cpu(hosts))

    def end(self) -> dict[str, Any]:
        end = time.perf_counter()
        window = [s for s in self.seen if self.start <= s[0] <= end]
        seconds = max(end - self.start, 1e-9)
        kinds = Counter(f"{k} {status}" for _, _, k, status in window)
        return {
            "seconds": round(seconds, 3),
            "requests": len(window),
            "per_second": round(len(window) / seconds, 1),
            "by_kind": dict(sorted(kinds.items())),
            "registry_cpu_s": round(_cpu(os.getpid()) - self.cpu[0], 2),
            "hosts_cpu_s": round(_cpu(self.hosts) - self.cpu[1], 2),
        }


async def _seed(registry: Any) -> bytes:
    """Four skills and version 1 of `hot`; the `SKILL.md` of that version."""
    for slug in ("alpha", "beta", "gamma", "delta"):
        await registry.write_package(
            SCOPE, slug, package(slug, files=3, size=KiB, tag="fleet"),
            expected_head=ANY, actor="bench",
        )  # fmt: skip
    return await _hot(registry, "one")


async def _hot(registry: Any, tag: str) -> bytes:
    """A new version of `hot`; its `SKILL.md`."""
    await registry.write_package(
        SCOPE, HOT, package(HOT, files=3, size=KiB, tag=tag),
        expected_head=ANY, actor="bench",
    )  # fmt: skip
    data: bytes = (await registry.read_package(SCOPE, HOT)).files["SKILL.md"].data
    return data


async def _registry_view(registry: Any, within: float) -> Any:
    """What `status --revoked` says once no target holds the version (or `within` ends).

    Each host's record follows its swap, so the registry's view lags the disks a little.
    """
    for _ in range(int(within / _POLL)):
        found = (await registry.revoked_status(SCOPE.workspace))[0]
        if not found.holding:
            break
        await asyncio.sleep(_POLL)
    return found


async def _started(server: uvicorn.Server) -> str:
    await _until(lambda: server.started, 30)
    port = server.servers[0].sockets[0].getsockname()[1]
    return f"http://127.0.0.1:{port}"


@scenario("revocation", "Revocation reaches 100 watching hosts")
async def revocation(run: Run) -> Result:
    count = 10 if run.quick else 100
    interval = 1.0 if run.quick else 2.0
    async with run.services.backend(SQLITE_LOCAL) as backend:
        registry = backend.registry
        first = await _seed(registry)
        token = (await registry.tokens.create(SCOPE.workspace, "read", name="b", actor="b")).token
        signer = registry.ctx.signing.signer
        assert signer is not None
        app = _Counted(create_app(registry))
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
        )
        serving = asyncio.create_task(server.serve())
        url = await _started(server)
        root = run.scratch / "fleet"
        root.mkdir()
        stop = run.scratch / "fleet-stop"
        fleet = _Fleet(url, token, signer.public_key_hex(), root, count, interval, stop)
        process = multiprocessing.get_context("spawn").Process(target=_hosts, args=(fleet,))
        process.start()
        hosts = process.pid
        assert hosts is not None
        targets = [root / f"host-{n:03d}" for n in range(count)]
        try:
            # The hosts hold version 1, then version 2 (the one to be yanked) replaces it.
            await _until(lambda: all(_holds(t, first) for t in targets), 60 + count)
            revoked = await _hot(registry, "two")
            await _until(lambda: all(_holds(t, revoked) for t in targets), 30 + 10 * interval)
            # Every host past its first runs (its records change its own answer once).
            await asyncio.sleep(6 * interval)
            window = _Window(app.seen, hosts)
            await asyncio.sleep(3 * interval)
            steady = window.end()

            asked = time.perf_counter()
            await registry.yank(SCOPE, HOT, 2, kind="security", reason="bench", actor="bench")
            # Hosts can see the revocation from its commit on; the yank's reply comes
            # right after it, so times count from there (the yank's own time is reported).
            committed = time.perf_counter()
            window = _Window(app.seen, hosts)
            converged: dict[Path, float] = {}

            def done() -> bool:
                now = time.perf_counter()
                for target in targets:
                    if target not in converged and not _holds(target, revoked):
                        converged[target] = now - committed
                return len(converged) == len(targets)

            await _until(done, 10 * interval + 30)
            converging = window.end()
            view = await _registry_view(registry, 10 * interval)
        finally:
            stop.touch()
            await asyncio.to_thread(process.join, 60)
            server.should_exit = True
            await serving
        errors = json.loads((root / "errors.json").read_text()) if process.exitcode == 0 else {}
    times = list(converged.values())
    slowest = max(times)
    return {
        "hosts": count,
        "interval_s": interval,
        "yank_s": round(committed - asked, 4),
        "converge": stats(times),
        "all_converged_s": round(slowest, 3),
        "goal_s": interval + 1,
        "met": slowest <= interval + 1,
        "steady": steady,
        "converging": converging,
        "load_ratio": round(converging["per_second"] / max(steady["per_second"], 1e-9), 2),
        "registry_view": {
            "converged": sum(t.state == "converged" for t in view.targets),
            "holding": view.holding,
            "slowest_s": view.slowest,
        },
        "host_errors": errors,
    }
