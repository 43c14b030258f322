"""The harness: a registry of scenarios, repetition counts, statistics and timing.

A scenario is one async function registered with `@scenario(name, title)`. It receives the
`Run` (quick or full, the services, a place for scratch files) and returns a JSON-able dict
whose `comparisons` list holds every figure next to its reference measured in the same loop:
subject and references alternate inside each repetition, so the noise of a shared machine
lands on both sides and only the ratio of the medians is read.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from bench.services import Services

Result = dict[str, Any]
T = TypeVar("T")
ScenarioFunction = Callable[["Run"], Awaitable[Result]]


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    function: ScenarioFunction


SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str, title: str) -> Callable[[ScenarioFunction], ScenarioFunction]:
    """Register `function` as scenario `name` (runs in registration order)."""

    def register(function: ScenarioFunction) -> ScenarioFunction:
        if name in SCENARIOS:
            raise ValueError(f"scenario {name!r} registered twice")
        SCENARIOS[name] = Scenario(name, title, function)
        return function

    return register


@dataclass
class Run:
    """What every scenario gets: the mode, the services and a scratch directory."""

    quick: bool
    services: Services
    scratch: Path
    notes: list[str] = field(default_factory=list)

    def reps(self, full: int, quick: int = 2) -> int:
        """Repetitions per measured point: `full` normally, `quick` in the smoke mode."""
        return quick if self.quick else full

    def pick(self, full: Sequence[Any], quick: Sequence[Any]) -> list[Any]:
        """A parameter list: `full` normally, a smaller `quick` one in the smoke mode."""
        return list(quick if self.quick else full)


def round_robin(cases: Sequence[T], rounds: int) -> Iterator[tuple[int, T]]:
    """(round, case) for every case in every round, the cases taking turns within a round.

    For figures compared with each other (the lock hold at each file size), not only with
    references: run case after case, a machine's drift over the minutes of a scenario (a
    fresh database warming up, background writeback) lands on whichever case ran then;
    taking turns spreads it over all of them.
    """
    for number in range(rounds):
        for case in cases:
            yield number, case


# ---------------------------------------------------------------- statistics


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between order statistics."""
    ordered = sorted(samples)
    if not ordered:
        return math.nan
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def stats(samples: Sequence[float]) -> dict[str, float]:
    """Median and spread (p10-p90, min, max) of a sample; times are in seconds."""
    if not samples:
        return {"n": 0, "median": math.nan, "p10": math.nan, "p90": math.nan}
    return {
        "n": len(samples),
        "median": statistics.median(samples),
        "p10": percentile(samples, 10),
        "p90": percentile(samples, 90),
        "p99": percentile(samples, 99),
        "min": min(samples),
        "max": max(samples),
    }


def compare(
    case: Mapping[str, Any],
    subject: Sequence[float],
    references: Mapping[str, Sequence[float]],
    **extra: Any,
) -> Result:
    """One figure: the subject's samples, each reference's, and median/median ratios."""
    subject_stats = stats(subject)
    reference_stats = {name: stats(samples) for name, samples in references.items()}
    ratios = {
        name: (subject_stats["median"] / s["median"] if s["median"] > 0 else math.nan)
        for name, s in reference_stats.items()
    }
    return {
        "case": dict(case),
        "subject": subject_stats,
        "references": reference_stats,
        "ratios": ratios,
        **extra,
    }


# ---------------------------------------------------------------- timing


@contextmanager
def timed(samples: list[float]) -> Iterator[None]:
    """Append the elapsed wall time of the block to `samples`."""
    start = time.perf_counter()
    yield
    samples.append(time.perf_counter() - start)


async def rotated(
    rep: int, contenders: Mapping[str, Callable[[], Awaitable[float]]]
) -> dict[str, float]:
    """Run each contender once (each returns its own time), the order rotated by `rep`.

    Within a repetition the contenders run one after the other; a fixed order would always
    hand the same one the disk's writeback, or the caches, of the one before it. Rotating
    spreads that over all of them across the repetitions.
    """
    names = list(contenders)
    shift = rep % len(names) if names else 0
    return {name: await contenders[name]() for name in names[shift:] + names[:shift]}


async def time_async(samples: list[float], work: Awaitable[Any]) -> Any:
    """Await `work`, append its wall time to `samples`, return its result."""
    start = time.perf_counter()
    result = await work
    samples.append(time.perf_counter() - start)
    return result
