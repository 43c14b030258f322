"""The `skills` client fixture: installed once (tests/harness/skills_cli.py), never skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.skills_cli import ToolUnavailable, ensure_skills_cli


@pytest.fixture(scope="session")
def skills_cli() -> Path:
    try:
        return ensure_skills_cli()
    except ToolUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
