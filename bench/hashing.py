"""Hashing: the registry's hashing path against blake3's own single-thread speed.

The subject is `registry.domain.manifest.build_manifest` (what every write runs on its
files: one BLAKE3 per file plus the manifest's canonical encoding and hash). The references
hash the same buffers with `blake3` directly, single-threaded: file by file, and as one
contiguous buffer of the same total size (the machine's ceiling).
"""

from __future__ import annotations

from blake3 import blake3

from bench.content import KiB, MiB, package
from bench.harness import Result, Run, compare, scenario, timed
from registry.domain.manifest import build_manifest
from registry.domain.model import PackageFile


@scenario("hashing", "Hashing throughput")
async def hashing(run: Run) -> Result:
    cases = run.pick([(100, KiB), (100, 64 * KiB), (100, MiB)], [(10, KiB), (10, MiB)])
    comparisons = []
    for files_count, size in cases:
        raw = package("hashing", files=files_count, size=size, tag=f"hash {size}")
        files = {path: PackageFile(data) for path, data in raw.items()}
        buffers = list(raw.values())
        joined = b"".join(buffers)
        total = len(joined)
        subject: list[float] = []
        per_file: list[float] = []
        one_buffer: list[float] = []
        for rep in range(run.reps(40, 2) + 1):
            s: list[float] = []
            f: list[float] = []
            o: list[float] = []
            with timed(s):
                build_manifest(files)
            with timed(f):
                for data in buffers:
                    blake3(data, max_threads=1).hexdigest()
            with timed(o):
                blake3(joined, max_threads=1).hexdigest()
            if rep:
                subject += s
                per_file += f
                one_buffer += o
        result = compare(
            {"files": files_count, "file_size": size},
            subject,
            {"blake3 per file": per_file, "blake3 one buffer": one_buffer},
            bytes=total,
        )
        result["throughput_mb_s"] = {
            "build_manifest": total / result["subject"]["median"] / 1e6,
            **{name: total / s["median"] / 1e6 for name, s in result["references"].items()},
        }
        comparisons.append(result)
    return {"comparisons": comparisons}
