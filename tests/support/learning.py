"""Helpers for the learning suites: learned packages and the learning write itself."""

from __future__ import annotations

from typing import Any

from registry import Origin
from registry.api import Registry
from registry.domain.model import ANY, ExpectedHead, PackageFile, Publication, Scope
from tests.support.packages import LEARNED_SECTIONS, SLUG
from tests.support.scopes import ACME

WORDS = [
    "collect",
    "the",
    "inputs",
    "into",
    "one",
    "folder",
    "then",
    "run",
    "the",
    "render",
    "script",
    "with",
    "the",
    "title",
    "and",
    "check",
    "the",
    "page",
    "count",
    "in",
    "the",
    "summary",
    "before",
    "sending",
    "the",
    "report",
    "to",
    "the",
    "team",
    "lead",
]


def learned_md(slug: str = SLUG, *, text: str = "", sections: str = LEARNED_SECTIONS) -> bytes:
    """A `SKILL.md` with Steps and Verification and a body of `text`."""
    return (
        f"---\nname: {slug}\ndescription: Learned from work.\n---\n\n# {slug}\n\n"
        f"{sections}\n{text}\n"
    ).encode()


def prose(seed: int, words: int = 60) -> str:
    """A deterministic paragraph; different seeds give texts that share little."""
    return " ".join(f"{WORDS[(i * (seed + 3)) % len(WORDS)]}{seed}-{i}" for i in range(words))


def learned(
    slug: str = SLUG, *, text: str = "", script: bytes = b"print('v1')\n"
) -> dict[str, bytes | PackageFile]:
    return {
        "SKILL.md": learned_md(slug, text=text),
        "scripts/run.py": PackageFile(script, executable=True),
    }


async def learn(
    registry: Registry,
    files: dict[str, bytes | PackageFile],
    *,
    slug: str = SLUG,
    expected: ExpectedHead = ANY,
    scope: Scope = ACME,
    **write: Any,
) -> Publication:
    """A learning write (origin `learning`, actor `learner`)."""
    return await registry.write_package(
        scope,
        slug,
        files,
        expected_head=expected,
        origin=Origin.LEARNING,
        actor="learner",
        **write,
    )
