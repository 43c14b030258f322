"""The frontmatter corpus: `SKILL.md` texts with the registry's and the reference's verdicts.

Each `FrontmatterCase` names the rule the registry refuses it with (None: accepted) and
whether the Agent Skills reference validator (`skills-ref`) accepts it. Where the two
disagree, `STRICTER` (the registry refuses what the reference accepts) and `LENIENT` (the
reverse) say why; docs/package-format.md ("The reference validator") lists the same rules.
`tests/domain/test_reference_validator.py` runs both over every case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class FrontmatterCase:
    id: str
    text: str
    slug: str = "pdf-report"
    rule: str | None = None  # the registry's refusal; None: it accepts
    reference_accepts: bool = True


def _md(fields: str, body: str = "# Skill\n") -> str:
    return f"---\n{fields}---\n\n{body}"


BASE = "name: pdf-report\ndescription: Makes PDF reports.\n"

CASES: Final = (
    # Accepted by both.
    FrontmatterCase("minimal", _md(BASE)),
    FrontmatterCase(
        "every_field",
        _md(
            BASE + "license: Apache-2.0\ncompatibility: Needs Python 3.\n"
            "allowed-tools: Bash Read\nmetadata:\n  owner: team\n  version: '1.4'\n"
        ),
    ),
    FrontmatterCase(
        "triggers_as_lines",
        _md(BASE + "metadata:\n  triggers: |\n    make a pdf\n    print the report\n"),
    ),
    FrontmatterCase(
        "unicode_name", _md("name: café-notes\ndescription: Notes.\n"), slug="café-notes"
    ),
    FrontmatterCase(
        "decomposed_name_is_nfkc_normalised",
        _md("name: cafe\u0301-notes\ndescription: Notes.\n"),
        slug="café-notes",
    ),
    FrontmatterCase(
        "cjk_name", _md("name: 日本語-メモ\ndescription: Notes.\n"), slug="日本語-メモ"
    ),
    FrontmatterCase(
        "quoted_name_with_blanks", _md("name: ' pdf-report '\ndescription: Makes PDF reports.\n")
    ),
    FrontmatterCase("empty_optional_field", _md(BASE + "license:\n")),
    FrontmatterCase("crlf", _md(BASE).replace("\n", "\r\n")),
    FrontmatterCase("quoted_description", _md("name: pdf-report\ndescription: 'a: b'\n")),
    # Refused by both.
    FrontmatterCase(
        "missing_name", _md("description: d\n"), rule="missing_name", reference_accepts=False
    ),
    FrontmatterCase(
        "missing_description",
        _md("name: pdf-report\n"),
        rule="missing_description",
        reference_accepts=False,
    ),
    FrontmatterCase(
        "top_level_triggers",
        _md(BASE + "triggers: make a pdf\n"),
        rule="unknown_field",
        reference_accepts=False,
    ),
    FrontmatterCase(
        "unknown_field", _md(BASE + "version: '1'\n"), rule="unknown_field", reference_accepts=False
    ),
    FrontmatterCase(
        "upper_case_name",
        _md("name: PDF-report\ndescription: d\n"),
        slug="pdf-report",
        rule="invalid_name",
        reference_accepts=False,
    ),
    FrontmatterCase(
        "name_mismatch",
        _md("name: other\ndescription: d\n"),
        rule="name_mismatch",
        reference_accepts=False,
    ),
    FrontmatterCase(
        "double_hyphen",
        _md("name: pdf--report\ndescription: d\n"),
        slug="pdf--report",
        rule="invalid_name",
        reference_accepts=False,
    ),
    FrontmatterCase(
        "leading_hyphen",
        _md("name: -pdf\ndescription: d\n"),
        slug="-pdf",
        rule="invalid_name",
        reference_accepts=False,
    ),
    FrontmatterCase(
        "underscore",
        _md("name: pdf_report\ndescription: d\n"),
        slug="pdf_report",
        rule="invalid_name",
        reference_accepts=False,
    ),
    FrontmatterCase(
        "name_too_long",
        _md(f"name: {'a' * 65}\ndescription: d\n"),
        slug="a" * 65,
        rule="invalid_name",
        reference_accepts=False,
    ),
    FrontmatterCase(
        "description_too_long",
        _md(f"name: pdf-report\ndescription: {'d' * 1025}\n"),
        rule="invalid_description",
        reference_accepts=False,
    ),
    FrontmatterCase(
        "compatibility_too_long",
        _md(BASE + f"compatibility: {'c' * 501}\n"),
        rule="invalid_compatibility",
        reference_accepts=False,
    ),
    FrontmatterCase("no_frontmatter", "# Skill\n", rule="no_frontmatter", reference_accepts=False),
    FrontmatterCase(
        "unterminated", "---\n" + BASE, rule="unterminated_frontmatter", reference_accepts=False
    ),
    FrontmatterCase(
        "a_list", _md("- name\n- description\n"), rule="not_a_mapping", reference_accepts=False
    ),
    FrontmatterCase(
        "duplicate_key",
        _md(BASE + "name: pdf-report\n"),
        rule="yaml_duplicate_key",
        reference_accepts=False,
    ),
    # Text, as the specification and the reference's strictyaml read it.
    FrontmatterCase("metadata_number", _md(BASE + "metadata:\n  version: 1.0\n")),
    FrontmatterCase("license_number", _md(BASE + "license: 2024\n")),
    FrontmatterCase("description_boolean", _md("name: pdf-report\ndescription: yes\n")),
    FrontmatterCase("description_null", _md("name: pdf-report\ndescription: null\n")),
    FrontmatterCase("license_date", _md(BASE + "license: 2020-02-30\n")),
    # Refused by both: what strictyaml refuses.
    FrontmatterCase(
        "flow_mapping",
        _md(BASE + "metadata: {owner: team}\n"),
        rule="yaml_flow_style",
        reference_accepts=False,
    ),
    FrontmatterCase(
        "flow_sequence",
        _md(BASE + "allowed-tools: [Read, Bash]\n"),
        rule="yaml_flow_style",
        reference_accepts=False,
    ),
    FrontmatterCase(
        "tag", _md(BASE + "license: !!str MIT\n"), rule="yaml_tag", reference_accepts=False
    ),
    FrontmatterCase(
        "anchor_and_alias",
        _md("name: &n pdf-report\ndescription: *n\n"),
        rule="yaml_alias",
        reference_accepts=False,
    ),
    FrontmatterCase(
        "undefined_alias",
        _md(BASE + "license: *nowhere\n"),
        rule="yaml_alias",
        reference_accepts=False,
    ),
    FrontmatterCase(
        "nested_duplicate_key",
        _md(BASE + "metadata:\n  a: x\n  a: y\n"),
        rule="yaml_duplicate_key",
        reference_accepts=False,
    ),
    FrontmatterCase(
        "inconsistent_indentation",
        _md(BASE + "metadata:\n  a: x\ncompatibility:\n    b: y\n"),
        rule="invalid_yaml",
        reference_accepts=False,
    ),
    # The registry is stricter (STRICTER says why).
    FrontmatterCase(
        "metadata_not_a_mapping", _md(BASE + "metadata: team\n"), rule="invalid_metadata"
    ),
    FrontmatterCase(
        "triggers_as_a_list",
        _md(BASE + "metadata:\n  triggers:\n    - make a pdf\n"),
        rule="invalid_triggers",
    ),
    FrontmatterCase(
        "eleven_triggers",
        _md(BASE + "metadata:\n  triggers: |\n" + "".join(f"    phrase {i}\n" for i in range(11))),
        rule="invalid_triggers",
    ),
    FrontmatterCase(
        "blank_compatibility", _md(BASE + "compatibility: ' '\n"), rule="invalid_compatibility"
    ),
    FrontmatterCase(
        "merge_key", _md(BASE + "metadata:\n  <<:\n    owner: team\n"), rule="yaml_merge_key"
    ),
    FrontmatterCase(
        "deep_nesting",
        _md(
            BASE
            + "license:\n"
            + "".join(" " * (2 * i) + "k:\n" for i in range(1, 17))
            + " " * 34
            + "v\n"
        ),
        rule="yaml_too_deep",
    ),
    FrontmatterCase(
        "many_nodes",
        _md(BASE + "license:\n" + "".join(f"  k{i}: v\n" for i in range(130))),
        rule="yaml_too_many_nodes",
    ),
)

STRICTER: Final = {
    "metadata_not_a_mapping": ("invalid_metadata", "the spec defines `metadata` as a mapping"),
    "triggers_as_a_list": (
        "invalid_triggers",
        "the spec says metadata values are strings: triggers are one string, a phrase a line",
    ),
    "eleven_triggers": ("invalid_triggers", "at most 10 phrases of 512 characters (the issue)"),
    "blank_compatibility": (
        "invalid_compatibility",
        "a blank compatibility says nothing and would show as an empty requirement",
    ),
    "merge_key": (
        "yaml_merge_key",
        "a merge hides the keys it adds, and their duplicates; strictyaml merges silently",
    ),
    "deep_nesting": (
        "yaml_too_deep",
        "strictyaml builds nested collections recursively; the spec's fields need 3 levels",
    ),
    "many_nodes": (
        "yaml_too_many_nodes",
        "strictyaml's validation takes time quadratic in a collection's entries",
    ),
}

LENIENT: Final[dict[str, str]] = {}
"""Cases the registry accepts and the reference refuses: none since the registry reads YAML
with strictyaml too (flow style, once accepted here, is refused by both)."""
