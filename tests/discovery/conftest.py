"""The `skills` client fixtures: installed once (tests/harness/skills_cli.py), never skipped."""

from __future__ import annotations

import pytest

from tests.harness.skills_cli import SkillsCli, ToolUnavailable, ensure_skills_cli


def _client(version: str) -> SkillsCli:
    try:
        return ensure_skills_cli(version)
    except ToolUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def skills_cli_16() -> SkillsCli:
    return _client("1.6.0")


@pytest.fixture(scope="session")
def skills_cli_17() -> SkillsCli:
    return _client("1.7.4")
