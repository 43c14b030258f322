"""A job worker in its own process, for the process-level tests.

    python -m tests.marketplace.worker_process --database-url URL --blob-url URL
        [--worker-id ID] [--lease SECONDS] [--kill-at FAILPOINT] [--wait-for-go]

Runs due jobs until none is due (`drain`), then prints `{"ran": N}` on stdout. With
`--kill-at`, the process SIGKILLs itself the first time it reaches that failpoint: a worker
that dies at a chosen step, deterministically. With `--wait-for-go` it first reads one line
from stdin, so a test can start several workers and release them together.

`work_until_killed` is the same worker for a multiprocessing forkserver that preloads this
module: each run is a fork of a process that has imported the registry once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys

from registry import Registry
from registry.settings import Settings


class KillAt:
    """Failpoints that kill this process when `point` is reached."""

    def __init__(self, point: str | None) -> None:
        self.point = point

    async def hit(self, name: str) -> None:
        if name == self.point:
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)


async def main(args: argparse.Namespace) -> int:
    settings = Settings(
        database_url=args.database_url, blob_url=args.blob_url, job_lease=args.lease
    )
    async with Registry.open(settings=settings, failpoints=KillAt(args.kill_at)) as registry:
        return await registry.marketplace.worker(worker_id=args.worker_id).run(drain=True)


def work_until_killed(
    database_url: str, blob_url: str, worker_id: str, lease: float, kill_at: str
) -> None:
    """Drain due jobs as `worker_id`; SIGKILL this process at `kill_at`."""
    arguments = argparse.Namespace(
        database_url=database_url,
        blob_url=blob_url,
        worker_id=worker_id,
        lease=lease,
        kill_at=kill_at,
    )
    asyncio.run(main(arguments))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--blob-url", required=True)
    parser.add_argument("--worker-id")
    parser.add_argument("--lease", type=float, default=600.0)
    parser.add_argument("--kill-at")
    parser.add_argument("--wait-for-go", action="store_true")
    arguments = parser.parse_args()
    if arguments.wait_for_go:
        sys.stdin.readline()
    ran = asyncio.run(main(arguments))
    sys.stdout.write(json.dumps({"ran": ran}) + "\n")
