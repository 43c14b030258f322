"""Reading the Dockerfile: its stages, their instructions, what they copy."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

Stage = list[tuple[str, str]]


def stages(text: str | None = None) -> list[Stage]:
    """Each stage's (INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    if text is None:
        text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    found = []
    for part in re.split(r"^(?=FROM )", re.sub(r"\\\n\s*", " ", text), flags=re.MULTILINE):
        if not part.startswith("FROM "):
            continue
        stage = []
        for line in part.splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                keyword, _, rest = line.strip().partition(" ")
                stage.append((keyword.upper(), rest.strip()))
        found.append(stage)
    return found


def copied(stage: Stage) -> list[str]:
    """The build-context paths a stage copies (not those it takes from another stage)."""
    return [
        source
        for keyword, args in stage
        if keyword == "COPY" and not args.startswith("--from")
        for source in args.split()[:-1]
    ]
