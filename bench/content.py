"""Benchmark packages: text that looks like a skill's files, unique per package.

Skill packages are Markdown, scripts and templates, so the content is prose-like text made
of ordinary words (it compresses as text does for git, and the content check reads it as
it would a real file). Each file starts with a header naming the package, the repetition
and the file, so no two packages share a blob unless a scenario wants them to.
"""

from __future__ import annotations

import random
import zlib
from functools import cache
from pathlib import Path
from typing import Final

KiB: Final = 1024
MiB: Final = 1024 * KiB

_WORDS: Final = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "on",
    "that",
    "with",
    "as",
    "by",
    "this",
    "be",
    "are",
    "from",
    "at",
    "or",
    "an",
    "it",
    "not",
    "which",
    "have",
    "has",
    "but",
    "use",
    "when",
    "run",
    "file",
    "script",
    "report",
    "data",
    "table",
    "output",
    "input",
    "each",
    "step",
    "check",
    "value",
    "list",
    "name",
    "path",
    "line",
    "skill",
    "package",
    "version",
    "read",
    "write",
    "make",
    "build",
    "test",
    "page",
    "section",
    "example",
    "result",
    "format",
    "column",
    "row",
    "field",
    "entry",
    "chart",
    "figure",
    "summary",
    "note",
    "detail",
    "source",
    "document",
    "template",
    "command",
    "option",
    "flag",
    "default",
    "return",
    "error",
    "message",
    "parse",
    "render",
)
# Words that contain what the content check looks for around an assignment ("auth", "key",
# "token", "pass"): the example skills have about one such word per 4 KiB, and so does this.
_RARE_WORDS: Final = ("author", "keyboard", "tokens", "passes", "monkey", "authority")
_RARE_PER_LINE: Final = 1 / 60


@cache
def _corpus(size: int) -> str:
    """`size` characters of deterministic word salad with line breaks."""
    rng = random.Random(size)
    parts: list[str] = []
    length = 0
    while length < size:
        words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 14))]
        if rng.random() < _RARE_PER_LINE:
            words[rng.randrange(len(words))] = rng.choice(_RARE_WORDS)
        line = " ".join(words) + ".\n"
        parts.append(line)
        length += len(line)
    return "".join(parts)[:size]


def _body(header: str, size: int) -> bytes:
    text = header + _corpus(max(size, 4 * KiB) + 64 * KiB)
    # A shifted slice of the corpus per file keeps files different beyond their header,
    # without generating fresh text for each one.
    offset = zlib.crc32(header.encode()) % (64 * KiB)
    data = (header + text[len(header) + offset :]).encode("ascii")
    return data[:size]


def skill_md(slug: str, size: int, tag: str) -> bytes:
    front = f"---\nname: {slug}\ndescription: A benchmark skill ({tag}).\n---\n\n# {slug}\n\n"
    body = _body(f"{tag}\n", max(size - len(front), 16))
    return front.encode("ascii") + body


def package(slug: str, *, files: int, size: int, tag: str) -> dict[str, bytes]:
    """`files` files (root `SKILL.md` included) of `size` bytes each; `tag` makes it unique."""
    out = {"SKILL.md": skill_md(slug, size, tag)}
    for i in range(1, files):
        folder = ("scripts", "references", "assets")[i % 3]
        out[f"{folder}/part-{i:03d}.md"] = _body(f"{slug} {tag} file {i}\n", size)
    return out


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    """Write `files` under `root` (no fsync: setting up a reference, not measuring it)."""
    for path, data in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def total_bytes(files: dict[str, bytes]) -> int:
    return sum(len(data) for data in files.values())
