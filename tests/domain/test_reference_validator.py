"""The registry and the Agent Skills reference validator (`skills-ref`), case by case.

Every `SKILL.md` of the frontmatter corpus goes through the registry's parser and through
`skills_ref.validator.validate` (a folder named after the slug). Their verdicts must be
the ones the corpus records; where they differ, the difference is a documented rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from skills_ref.validator import validate

from registry.domain.frontmatter import parse_skill_md
from registry.errors import FrontmatterInvalid, InvalidName
from tests.corpus.frontmatter import CASES, LENIENT, STRICTER, FrontmatterCase

DOCS = Path(__file__).parents[2] / "docs" / "package-format.md"


def registry_rule(case: FrontmatterCase) -> str | None:
    try:
        parse_skill_md(case.text.encode("utf-8"), case.slug)
    except FrontmatterInvalid as exc:
        return exc.rule
    except InvalidName:
        return "invalid_name"  # the slug itself (the folder name) is not a slug
    return None


def reference_accepts(case: FrontmatterCase, tmp_path: Path) -> bool:
    folder = tmp_path / case.slug
    folder.mkdir()
    (folder / "SKILL.md").write_bytes(case.text.encode("utf-8"))
    try:
        return validate(folder) == []
    except Exception:
        return False


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_registry_and_the_reference_agree_or_the_difference_is_documented(case, tmp_path):
    verdicts = (registry_rule(case), reference_accepts(case, tmp_path))
    assert verdicts == (case.rule, case.reference_accepts)
    if case.reference_accepts and case.rule is not None:
        assert STRICTER[case.id][0] == case.rule
    if not case.reference_accepts and case.rule is None:
        assert case.id in LENIENT


def test_every_stricter_rule_is_documented_with_its_reason():
    section = DOCS.read_text().split("### The reference validator", 1)[1].split("\n## ", 1)[0]
    for case_id, (rule, _reason) in STRICTER.items():
        assert f"`{rule}`" in section, case_id
    assert set(STRICTER) | set(LENIENT) == {
        c.id for c in CASES if (c.rule is None) != c.reference_accepts
    }
