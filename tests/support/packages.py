"""Small, valid packages for tests, and the shortcut that writes one through the registry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from registry.api import Registry
from registry.domain.model import ExpectedHead, PackageFile, Publication, Scope
from tests.support.scopes import ACME

SLUG: Final = "pdf-report"
"""The slug a test writes when the name does not matter."""


LEARNED_SECTIONS: Final = (
    "## Steps\n\n1. Run the script on the input.\n\n"
    "## Verification\n\nThe report file exists and lists every input row.\n"
)
"""The Steps and Verification a learning write's `SKILL.md` must carry (docs/history.md)."""


def skill_md(
    slug: str, description: str = "Does a useful thing for tests.", body: str = ""
) -> bytes:
    return (
        f"---\nname: {slug}\ndescription: {description}\n---\n\n# {slug}\n\n"
        f"{LEARNED_SECTIONS}\n{body}\n"
    ).encode()


def package(
    slug: str, *, files: int = 3, size: int = 64, tag: str = "", executable: bool = True
) -> dict[str, bytes | PackageFile]:
    """A package of `files` supporting files of about `size` bytes; `tag` varies the content."""
    out: dict[str, bytes | PackageFile] = {"SKILL.md": skill_md(slug, body=tag)}
    for i in range(files):
        data = (f"{slug}:{tag}:{i}:".encode() * (size // 8 + 1))[:size]
        if i == 0 and executable:
            out["scripts/run.py"] = PackageFile(data, executable=True)
        else:
            out[f"references/part-{i:03d}.md"] = data
    return out


async def publish(
    registry: Registry,
    slug: str = SLUG,
    files: Mapping[str, bytes | PackageFile] | None = None,
    expected: ExpectedHead = None,
    *,
    scope: Scope = ACME,
    tag: str = "",
    actor: str = "u1",
    **write: Any,
) -> Publication:
    """Write `files` (by default `package(slug, tag=tag)`) as `slug`'s head in `scope`.

    `expected` is the write's `expected_head` (None: a new skill); `write` passes on to
    `write_package` (`sources`, `message`, `origin`, ...).
    """
    return await registry.write_package(
        scope,
        slug,
        files if files is not None else package(slug, tag=tag),
        expected_head=expected,
        actor=actor,
        **write,
    )


def as_bytes(files: dict[str, bytes | PackageFile]) -> dict[str, tuple[bytes, bool]]:
    """Normalise for comparisons: path -> (bytes, executable)."""
    result = {}
    for path, value in files.items():
        if isinstance(value, PackageFile):
            result[path] = (value.data, value.executable)
        else:
            result[path] = (value, False)
    return result
