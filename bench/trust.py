"""Trust: what signing costs a write, what verifying costs a host, how large an attestation is.

The subject publishes with its attestation signed and stored in the locked transaction, as
every write does; the reference is the same write in the same loop with the attestation
step replaced by nothing (patched in this process only: the registry has no unsigned
mode). The ratio is the cost of signing per write. Verifying is timed per version: the
signature and the canonical digest recomputed from the files, as `skillreg verify --dir`
and a host do. The sync's fill is also set against copying the same files
(`bench/references.py`: `copy`, and `durable copy` with a materialised skill's durability).
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import httpx

from bench.content import KiB, package
from bench.harness import Result, Run, compare, scenario, time_async, timed
from bench.references import durable_copy, naive_write
from bench.services import SQLITE_LOCAL
from registry.api.trust import verify_package
from registry.client import Sync
from registry.client import trust as host_trust
from registry.client.trust import HostTrust, TrustRoot
from registry.domain.model import ANY, PackageFile, Scope
from registry.domain.signed_state import SignedState, parse_state
from registry.http.app import create_app
from registry.services.trust import attest

SCOPE = Scope("bench")


@contextmanager
def _unsigned() -> Iterator[None]:
    """The write path with its attestation step doing nothing (the reference)."""
    signed = attest.record

    async def nothing(*args: Any, **kwargs: Any) -> str:
        del args, kwargs
        return "0" * 64

    attest.record = nothing
    try:
        yield
    finally:
        attest.record = signed


@scenario("trust", "Signing and verifying versions")
async def trust(run: Run) -> Result:
    comparisons = []
    sizes: dict[str, int] = {}
    async with run.services.backend(SQLITE_LOCAL) as backend:
        registry = backend.registry
        for files_count, size in run.pick([(10, KiB), (10, 64 * KiB)], [(3, KiB)]):
            slug = f"trust-{files_count}-{size}"
            signed: list[float] = []
            unsigned: list[float] = []
            for rep in range(run.reps(30, 2) + 1):
                s: list[float] = []
                u: list[float] = []
                with timed(s):
                    await registry.write_package(
                        SCOPE, slug, package(slug, files=files_count, size=size, tag=f"s{rep}"),
                        expected_head=ANY, actor="bench",
                    )  # fmt: skip
                with _unsigned(), timed(u):
                    await registry.write_package(
                        SCOPE, slug, package(slug, files=files_count, size=size, tag=f"u{rep}"),
                        expected_head=ANY, actor="bench",
                    )  # fmt: skip
                if rep:
                    signed += s
                    unsigned += u
            comparisons.append(
                compare(
                    {"what": "publish", "files": files_count, "file_size": size},
                    signed,
                    {"the same write unsigned": unsigned},
                )
            )
        # The head is the last write of the loop: signed or not, ask its first version.
        slug = f"trust-{files_count}-{size}"
        stored = await registry.trust.attestation(SCOPE, slug, 1)
        document = await registry.trust.keys_document()
        files = await registry.read_package(SCOPE, slug, 1)
        plain = {p: PackageFile(f.data, f.executable) for p, f in files.files.items()}
        sizes = {"attestation_bytes": len(stored.envelope), "files": len(plain)}
        checks: list[float] = []
        for _ in range(run.reps(200, 3)):
            with timed(checks):
                verify_package(plain, stored.envelope, document, subject=stored.subject)
        comparisons.append(compare({"what": "verify one version", "files": len(plain)}, checks, {}))
    return {"comparisons": comparisons, **sizes}


@contextmanager
def _unverified() -> Iterator[None]:
    """The sync client with its trust checks doing nothing (the reference).

    The signed state is parsed but its signature not verified, and no attestation is
    fetched or verified.
    """
    names = (
        (host_trust, "open_state"),
        (HostTrust, "check_package"),
        (HostTrust, "known"),
    )
    saved = [getattr(owner, name) for owner, name in names]

    def parse_only(envelope: bytes, keys: object) -> SignedState:
        del keys
        payload = base64.b64decode(json.loads(envelope)["payload"])
        return parse_state("", payload)

    async def no_package(*args: Any, **kwargs: Any) -> None:
        del args, kwargs

    def known(*args: Any, **kwargs: Any) -> bool:
        del args, kwargs
        return True

    for (owner, name), stand_in in zip(names, (parse_only, no_package, known), strict=True):
        setattr(owner, name, stand_in)  # the module's own name, as `HostTrust` looks it up
    try:
        yield
    finally:
        for (owner, name), real in zip(names, saved, strict=True):
            setattr(owner, name, real)


@scenario("trust_sync", "Verifying what a host syncs: 1,000 signed skills")
async def trust_sync(run: Run) -> Result:
    count = 30 if run.quick else 1_000
    scope = Scope("bench-sync")
    async with run.services.backend(SQLITE_LOCAL) as backend:
        registry = backend.registry
        packages = {
            f"skill-{i:04d}": package(f"skill-{i:04d}", files=3, size=KiB, tag=f"sync {i}")
            for i in range(count)
        }
        for slug, files in packages.items():
            await registry.write_package(scope, slug, files, expected_head=ANY, actor="bench")
        flat = {f"{s}/{p}": d for s, files in packages.items() for p, d in files.items()}
        token = (await registry.tokens.create(scope.workspace, "read", name="b", actor="b")).token
        transport = httpx.ASGITransport(app=create_app(registry))
        signer = registry.ctx.signing.signer
        assert signer is not None
        root = TrustRoot(keys={signer.key_id: signer.public})

        def syncer(target: Path) -> Sync:
            return Sync("http://127.0.0.1", token, scope, target, trust=root, transport=transport)

        fills: dict[str, list[float]] = {"checked": [], "unchecked": []}
        copies: dict[str, list[float]] = {"copy": [], "durable copy": []}
        steady: dict[str, list[float]] = {"checked": [], "unchecked": []}
        for rep in range(run.reps(3, 1)):
            for kind in ("checked", "unchecked"):
                target = run.scratch / f"sync-{kind}-{rep}"
                guard = _unverified() if kind == "unchecked" else nullcontext()
                with guard:
                    async with syncer(target) as sync:
                        report = await time_async(fills[kind], sync.once())
                        if len(report.written) != count:
                            raise AssertionError(f"sync wrote {len(report.written)} of {count}")
                        for _ in range(3):
                            await time_async(steady[kind], sync.once())
                await asyncio.to_thread(shutil.rmtree, target)
            folder = run.scratch / f"copy-{rep}"
            copies["copy"].append(await asyncio.to_thread(naive_write, folder, flat))
            await asyncio.to_thread(shutil.rmtree, folder)
            folder = run.scratch / f"durable-copy-{rep}"
            copies["durable copy"].append(await asyncio.to_thread(durable_copy, folder, packages))
            await asyncio.to_thread(shutil.rmtree, folder)
        signs: dict[str, list[float]] = {"signed": [], "unsigned": []}
        for _ in range(run.reps(20, 2)):
            for kind in ("signed", "unsigned"):
                await time_async(
                    signs[kind], registry.targets.desired(scope, signed=kind == "signed")
                )
        case = {"skills": count, "files": 3, "file_size": KiB}
        comparisons = [
            compare(
                {**case, "what": "sync, fill an empty target"},
                fills["checked"],
                {"the same sync unchecked": fills["unchecked"], **copies},
            ),
            compare(
                {**case, "what": "sync, nothing changed (304, the saved state re-checked)"},
                steady["checked"],
                {"the same sync unchecked": steady["unchecked"]},
            ),
            compare(
                {**case, "what": "serve the desired state (read, build, sign)"},
                signs["signed"],
                {"the same state unsigned": signs["unsigned"]},
            ),
        ]
        state = await registry.targets.desired(scope, signed=True)
        assert state.state is not None
        assert state.state.signed is not None
    return {"comparisons": comparisons, "signed_state_bytes": len(state.state.signed)}
