"""Read a pinned version of 100 files against reading the same files from a folder.

The registry reads the version's manifest (one read transaction) and fetches every blob in
parallel, verifying each digest. The reference opens and reads the same 100 files from a
folder written beforehand (both sides are warm: the blobs and the folder are in the page
cache, the same as a loader re-reading a skill). The floor fetches the same blobs straight
from the backend's store, in parallel, without the registry: on S3 (moto, a slow local
stand-in for S3) it shows how much of the figure is the store itself.
"""

from __future__ import annotations

import asyncio
import shutil

from bench.content import KiB, package, write_tree
from bench.harness import Result, Run, compare, scenario, time_async, timed
from bench.services import PG_S3, SQLITE_LOCAL
from bench.write import SCOPE
from blobstore import BlobStore
from registry.domain.model import ANY


async def _get_all(store: BlobStore, digests: list[str]) -> list[bytes]:
    """The floor: every blob straight from the store, 16 at a time (as the registry reads)."""
    gate = asyncio.Semaphore(16)

    async def get(digest: str) -> bytes:
        async with gate:
            return await store.get(digest)

    return await asyncio.gather(*(get(d) for d in digests))


@scenario("read", "Read a pinned version")
async def read_pinned(run: Run) -> Result:
    files_count = 100
    sizes = run.pick([KiB, 16 * KiB, 64 * KiB], [16 * KiB])
    comparisons = []
    for kind in (SQLITE_LOCAL, PG_S3):
        async with run.services.backend(kind) as backend:
            registry = backend.registry
            for size in sizes:
                slug = f"r{size}"
                files = package(slug, files=files_count, size=size, tag="pinned")
                await registry.write_package(SCOPE, slug, files, expected_head=None, actor="b")
                newer = package(slug, files=files_count, size=size, tag="newer")
                await registry.write_package(SCOPE, slug, newer, expected_head=ANY, actor="b")
                pkg_info = await registry.package_info(SCOPE, slug, version=1)
                folder = run.scratch / f"{kind}-{size}"
                write_tree(folder, files)
                digests = sorted({e.digest for e in pkg_info.manifest.entries})

                subject: list[float] = []
                reference: list[float] = []
                floor: list[float] = []
                for rep in range(run.reps(20, 2) + 1):
                    s: list[float] = []
                    r: list[float] = []
                    f: list[float] = []
                    pkg = await time_async(s, registry.read_package(SCOPE, slug, version=1))
                    with timed(r):
                        read = {path: (folder / path).read_bytes() for path in files}
                    if {p: f.data for p, f in pkg.files.items()} != read:
                        raise AssertionError("the pinned version differs from its folder")
                    await time_async(f, _get_all(backend.store, digests))
                    if rep:
                        subject += s
                        reference += r
                        floor += f
                shutil.rmtree(folder)
                comparisons.append(
                    compare(
                        {"backend": kind, "files": files_count, "file_size": size},
                        subject,
                        {"folder": reference, "floor": floor},
                    )
                )
    return {"comparisons": comparisons}
