"""Run the benchmark scenarios and write their results as JSON.

    python -m bench.run [--quick] [--only SCENARIO ...] [--out bench/results/latest.json]
                        [--report]

`--quick` is the smoke mode CI runs: every scenario and code path, tiny repetition counts.
`--report` regenerates `docs/benchmarks.md` and its plots from the JSON afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import blake3

# Importing the scenario modules registers them, in this order.
from bench import (  # noqa: F401
    concurrency,
    cost,
    garbage,
    hashing,
    profiling,
    reads,
    reconcile,
    revocation,
    scale,
    search,
    startup,
    trust,
    write,
)
from bench.harness import SCENARIOS, Run
from bench.machine import probe as machine_probe
from bench.services import Services

# The order; a scenario registered but not listed here runs after these.
ORDER = (
    "publish",
    "update",
    "noop",
    "lock",
    "concurrency",
    "scale",
    "read",
    "hashing",
    "reconcile",
    "gc",
    "search",
    "profile",
    "cost",
    "startup",
)
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench" / "results" / "latest.json"


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smoke mode: tiny repetitions")
    parser.add_argument(
        "--only", nargs="+", choices=sorted(SCENARIOS), metavar="SCENARIO", help="run these"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the JSON results file")
    parser.add_argument("--report", action="store_true", help="regenerate docs/benchmarks.md")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    return parser.parse_args(argv)


def _git_revision() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "unknown"


def _machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "blake3": getattr(blake3, "__version__", "unknown"),
        "git": subprocess.run(
            ["git", "--version"], capture_output=True, text=True, check=False
        ).stdout.strip(),
    }


def _load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, where the platform has them."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return None


async def _run_all(
    names: list[str], *, quick: bool, scratch: Path, save: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    services = Services(scratch)
    results: dict[str, Any] = {}
    try:
        for name in names:
            spec = SCENARIOS[name]
            print(f"[bench] {name}: {spec.title} ...", flush=True)
            run = Run(quick=quick, services=services, scratch=scratch / name)
            run.scratch.mkdir(parents=True)
            started = time.perf_counter()
            result = await spec.function(run)
            elapsed = time.perf_counter() - started
            results[name] = {"title": spec.title, "elapsed": elapsed, **result}
            if run.notes:
                results[name]["notes"] = run.notes
            print(f"[bench] {name}: done in {elapsed:.1f} s", flush=True)
            save(results)  # a run that dies later keeps what it measured
    finally:
        await asyncio.to_thread(services.close)
    return results


def _stop_on_sigterm() -> None:
    # `kill` (and CI's timeout) becomes SystemExit, so databases, buckets, the moto
    # process and the scratch directory are cleaned up on the way out.
    def stop(_signum: int, _frame: object) -> None:
        sys.exit(128 + signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.list:
        for name, spec in SCENARIOS.items():
            print(f"{name:12} {spec.title}")
        return 0
    _stop_on_sigterm()
    names = args.only or sorted(
        SCENARIOS, key=lambda n: ORDER.index(n) if n in ORDER else len(ORDER)
    )
    started = time.perf_counter()
    # The machine is shared: the load when the run started and at its last save go with
    # the results, so a reader can tell a quiet run from a busy one.
    load_at_start = _load_average()
    speed: dict[str, Any] = {}
    previous: dict[str, Any] = {}
    if args.only and args.out.exists():
        # A partial run updates its scenarios in the existing results, keeping the rest.
        document = json.loads(args.out.read_text())
        if document.get("meta", {}).get("quick") == args.quick:
            previous = document.get("scenarios", {})

    def save(scenarios: dict[str, Any]) -> None:
        document = {
            "meta": {
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "revision": _git_revision(),
                "quick": args.quick,
                "elapsed": time.perf_counter() - started,
                "machine": _machine(),
                "load_average": {"start": load_at_start, "end": _load_average()},
                "speed": speed,
            },
            "scenarios": {**previous, **scenarios},
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp_out = args.out.with_suffix(".json.tmp")
        tmp_out.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
        tmp_out.replace(args.out)

    with tempfile.TemporaryDirectory(prefix="skillreg-bench-") as tmp:
        speed["start"] = machine_probe(Path(tmp))
        results = asyncio.run(_run_all(names, quick=args.quick, scratch=Path(tmp), save=save))
        speed["end"] = machine_probe(Path(tmp))
        save(results)
    print(f"[bench] wrote {args.out} in {time.perf_counter() - started:.0f} s", flush=True)
    if args.report:
        from bench import report  # noqa: PLC0415 - matplotlib only when asked

        report.main([str(args.out)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
