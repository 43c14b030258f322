"""Trust: what signing costs a write, what verifying costs a host, how large an attestation is.

The subject publishes with its attestation signed and stored in the locked transaction, as
every write does; the reference is the same write in the same loop with the attestation
step replaced by nothing (patched in this process only: the registry has no unsigned
mode). The ratio is the cost of signing per write. Verifying is timed per version: the
signature and the canonical digest recomputed from the files, as `skillreg verify --dir`
and a host do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench.content import KiB, package
from bench.harness import Result, Run, compare, scenario, timed
from bench.services import SQLITE_LOCAL
from registry.api.trust import verify_package
from registry.domain.model import ANY, PackageFile, Scope
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
