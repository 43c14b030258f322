"""Reading the examples out of README.md and docs/*.md (the convention: docs/development.md).

Every fenced block names its language. `sh` and `python` blocks are examples and are run;
a `text` block right after an example (nothing but blank lines between) is its exact
output, an `http` block its status line. `<!-- not run: REASON -->` on the line before a
fence keeps that block from running, and says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = frozenset({"sh", "python"})
# Shell under another name would escape the runner: a shell example is `sh`.
REFUSED = frozenset({"bash", "shell", "console", "zsh", "shell-session"})

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_NOT_RUN = re.compile(r"<!--\s*not run:\s*((?:(?!-->).)*?)\s*-->\s*\Z", re.DOTALL)


@dataclass
class Block:
    line: int  # where the fence opens, 1-based
    lang: str
    body: str
    not_run: str | None  # the reason given, if the block is marked not to run
    follows: Block | None = None  # the example this block is the output of, if any

    @property
    def runs(self) -> bool:
        return self.lang in RUNNABLE and self.not_run is None


@dataclass
class Example:
    block: Block
    expect_status: int | None = None
    expect_text: str | None = None


def pages() -> list[Path]:
    """Every page whose examples are checked."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(text: str) -> list[Block]:
    """The fenced blocks of a page, in order."""
    found: list[Block] = []
    end = 0
    for match in _FENCE.finditer(text):
        before = text[end : match.start()]
        marker = _NOT_RUN.search(before)
        block = Block(
            line=text.count("\n", 0, match.start()) + 1,
            lang=match.group(1).strip(),
            body=match.group(2),
            not_run=marker.group(1) if marker else None,
        )
        if found and found[-1].runs and not before.strip():
            block.follows = found[-1]
        found.append(block)
        end = match.end()
    return found


def examples(text: str) -> list[Example]:
    """The runnable blocks of a page, each with the output the page expects of it."""
    found: list[Example] = []
    for block in blocks(text):
        if block.runs:
            found.append(Example(block))
        elif block.follows is not None and found and found[-1].block is block.follows:
            if block.lang == "http":
                found[-1].expect_status = int(block.body.split()[1])
            elif block.lang == "text":
                found[-1].expect_text = block.body
    return found


def problems(page: Path) -> list[str]:
    """What breaks the convention on `page`: untagged fences, other shell names, bare marks."""
    text = page.read_text(encoding="utf-8")
    where = page.relative_to(ROOT)
    wrong = []
    for block in blocks(text):
        if not block.lang:
            wrong.append(f"{where}:{block.line}: a fence without a language (use sh, text, ...)")
        elif block.lang in REFUSED:
            wrong.append(f"{where}:{block.line}: `{block.lang}`: a shell example is `sh`")
        if block.not_run is not None and not block.not_run:
            wrong.append(f"{where}:{block.line}: `not run` needs a reason")
        if block.not_run is not None and block.lang not in RUNNABLE:
            wrong.append(f"{where}:{block.line}: `not run` on a {block.lang} block, never run")
    return wrong
