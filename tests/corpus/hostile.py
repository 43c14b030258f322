"""The hostile package corpus: packages the registry must refuse, each for one reason.

Every `HostileCase` is a complete package (a mapping of raw path to bytes or `PackageFile`)
that breaks exactly one rule, and the error it must produce: the exception class and, where
the class carries one, the stable rule name (`PathRejected.rule`, `LimitExceeded.rule`,
`FrontmatterInvalid.rule`, `ContentBlocked.pattern_class`). `path`, when set, is the path
the error must name.

The cases assume `CORPUS_LIMITS` (small, so that "too large" cases stay tiny); a registry
test that replays them must configure its registry with those limits. Secret cases pass
validation and are refused by the content check (`DefaultScanner`); every other case is
refused by `validate_package`. Replaying a case through the registry, the write must store
nothing and the CLI must exit 3.
"""

from __future__ import annotations

from dataclasses import dataclass

from registry.domain.limits import Limits
from registry.domain.model import PackageFile
from registry.errors import (
    ContentBlocked,
    FrontmatterInvalid,
    InvalidName,
    LimitExceeded,
    PathRejected,
    RegistryError,
)
from tests.corpus import fakes

CORPUS_LIMITS = Limits(
    max_files=8,
    max_file_bytes=2048,
    max_package_bytes=8192,
    max_depth=4,
    max_segment_bytes=32,
)
SLUG = "corpus-skill"


def skill_md(
    name: str = SLUG,
    description: str = "A skill from the hostile corpus.",
    extra: str = "",
    body: str = "# Corpus skill\n\nUse it when a test needs a valid package.\n",
) -> bytes:
    """A `SKILL.md` whose frontmatter holds `name`, `description` and `extra` lines."""
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}".encode()


VALID_SKILL_MD = skill_md()
VALID_FILES: dict[str, bytes | PackageFile] = {
    "SKILL.md": VALID_SKILL_MD,
    "scripts/run.py": PackageFile(b"print('hello')\n", executable=True),
    "references/guide.md": b"# Guide\n",
}
"""A valid package under `CORPUS_LIMITS`; most cases are this plus or minus one thing."""


@dataclass(frozen=True)
class HostileCase:
    """One package the registry must refuse, and how."""

    id: str
    files: dict[str, bytes | PackageFile]
    slug: str
    error: type[RegistryError]
    rule: str | None
    path: str | None = None

    def matches(self, exc: BaseException) -> bool:
        """True if `exc` is the refusal this case expects."""
        if type(exc) is not self.error:
            return False
        if self.rule is not None:
            actual = exc.pattern_class if isinstance(exc, ContentBlocked) else exc.rule
            if actual != self.rule:
                return False
        return self.path is None or getattr(exc, "path", None) == self.path


def _plus(extra: dict[str, bytes | PackageFile]) -> dict[str, bytes | PackageFile]:
    return {**VALID_FILES, **extra}


def _skill(data: bytes) -> dict[str, bytes | PackageFile]:
    return {**VALID_FILES, "SKILL.md": data}


def _path(case_id: str, raw: str, rule: str) -> HostileCase:
    return HostileCase(case_id, _plus({raw: b"x\n"}), SLUG, PathRejected, rule, raw)


def _front(case_id: str, data: bytes, rule: str) -> HostileCase:
    return HostileCase(case_id, _skill(data), SLUG, FrontmatterInvalid, rule, "SKILL.md")


def _secret(case_id: str, path: str, data: bytes, pattern_class: str) -> HostileCase:
    return HostileCase(case_id, _plus({path: data}), SLUG, ContentBlocked, pattern_class, path)


_BILLION_LAUGHS = (
    "---\n"
    f"name: {SLUG}\n"
    "description: &a0 lol\n"
    + "".join(f"l{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]\n" for i in range(1, 10))
    + "---\n"
).encode()

CASES: list[HostileCase] = [
    # ------------------------------------------------------------ single paths
    _path("traversal-leading-dotdot", "../escape.txt", "dot_segment"),
    _path("traversal-inner-dotdot", "scripts/../../etc/passwd", "dot_segment"),
    _path("dot-segment", "./run.sh", "dot_segment"),
    _path("windows-dots", "scripts/.../x", "dot_segment"),
    _path("fullwidth-dotdot", "\uff0e\uff0e/escape.txt", "dot_segment"),
    _path("one-dot-leader-pair", "\u2024\u2024/escape.txt", "dot_segment"),
    _path("two-dot-leader", "a/\u2025/escape.txt", "dot_segment"),
    _path("fullwidth-solidus", "a\uff0f..\uff0fb.txt", "separator_lookalike"),
    _path("absolute", "/etc/passwd", "absolute_path"),
    _path("backslash-traversal", "..\\..\\evil.bat", "backslash"),
    _path("backslash-separator", "scripts\\run.py", "backslash"),
    _path("nul-byte", "run.py\x00.txt", "nul_byte"),
    _path("newline", "notes\n.md", "control_character"),
    _path("escape-character", "\x1b[31mred.txt", "control_character"),
    _path("del", "a\x7f.txt", "control_character"),
    _path("c1-control", "a\x9b.txt", "control_character"),
    _path("bidi-override", "invoice\u202etxt.sh", "bidi_control"),
    _path("empty-segment", "a//b.txt", "empty_segment"),
    _path("trailing-slash", "scripts/", "empty_segment"),
    _path("empty-path", "", "empty_path"),
    _path("lone-surrogate", "bad\udc80.txt", "invalid_unicode"),
    _path("too-deep", "a/b/c/d/e.txt", "too_deep"),
    _path("segment-too-long", "a" * 33, "segment_too_long"),
    _path("segment-too-long-in-bytes", "\u00e9" * 17, "segment_too_long"),
    _path("nested-skill-md", "sub/SKILL.md", "nested_skill_md"),
    _path("nested-skill-md-lowercase", "scripts/skill.md", "nested_skill_md"),
    # ------------------------------------------------------------ path sets
    HostileCase(
        "nfc-duplicate",
        _plus({"caf\u00e9.md": b"a", "cafe\u0301.md": b"b"}),
        SLUG,
        PathRejected,
        "duplicate_path",
    ),
    HostileCase(
        "casefold-files",
        _plus({"README.md": b"a", "readme.md": b"b"}),
        SLUG,
        PathRejected,
        "case_collision",
    ),
    HostileCase(
        "casefold-directories",
        _plus({"Scripts/a.py": b"a", "scripts/b.py": b"b"}),
        SLUG,
        PathRejected,
        "case_collision",
    ),
    HostileCase(
        "casefold-skill-md", _plus({"skill.md": b"x"}), SLUG, PathRejected, "case_collision"
    ),
    HostileCase(
        "casefold-sharp-s",
        _plus({"STRASSE.md": b"a", "stra\u00dfe.md": b"b"}),
        SLUG,
        PathRejected,
        "case_collision",
    ),
    HostileCase(
        "file-and-directory",
        _plus({"data": b"a", "data/x.csv": b"b"}),
        SLUG,
        PathRejected,
        "file_dir_conflict",
        "data",
    ),
    # ------------------------------------------------------------ limits
    HostileCase(
        "too-many-files",
        _plus({f"references/{i}.md": b"x" for i in range(6)}),
        SLUG,
        LimitExceeded,
        "max_files",
    ),
    HostileCase(
        "file-too-large",
        _plus({"assets/big.bin": b"\0" * 2049}),
        SLUG,
        LimitExceeded,
        "max_file_bytes",
        "assets/big.bin",
    ),
    HostileCase(
        "skill-md-too-large",
        _skill(skill_md(body="x" * 2048)),
        SLUG,
        LimitExceeded,
        "max_file_bytes",
        "SKILL.md",
    ),
    HostileCase(
        "package-too-large",
        _plus({f"assets/{i}.bin": b"\0" * 2040 for i in range(4)}),
        SLUG,
        LimitExceeded,
        "max_package_bytes",
    ),
    # ------------------------------------------------------------ SKILL.md
    HostileCase(
        "missing-skill-md",
        {"README.md": b"# Not a skill\n"},
        SLUG,
        FrontmatterInvalid,
        "missing_skill_md",
    ),
    HostileCase(
        "lowercase-skill-md-only",
        {"skill.md": VALID_SKILL_MD},
        SLUG,
        FrontmatterInvalid,
        "missing_skill_md",
    ),
    HostileCase("empty-package", {}, SLUG, FrontmatterInvalid, "missing_skill_md"),
    _front("no-frontmatter", b"# Just Markdown\n", "no_frontmatter"),
    _front("byte-order-mark", b"\xef\xbb\xbf" + VALID_SKILL_MD, "no_frontmatter"),
    _front("unterminated-frontmatter", f"---\nname: {SLUG}\n".encode(), "unterminated_frontmatter"),
    _front("malformed-yaml", f"---\nname: '{SLUG}\n---\n".encode(), "invalid_yaml"),
    _front("yaml-flow-style", f"---\nname: [{SLUG}\n---\n".encode(), "yaml_flow_style"),
    _front("yaml-tag", skill_md(extra="license: !!python/object:os.system x\n"), "yaml_tag"),
    _front("yaml-merge-key", skill_md(extra="metadata:\n  <<:\n    a: b\n"), "yaml_merge_key"),
    _front("yaml-deep", skill_md(extra="metadata:\n  " + "- " * 100 + "x\n"), "yaml_too_deep"),
    _front(
        "yaml-many-nodes",
        skill_md(extra="metadata:\n" + "".join(f"  k{i}: v\n" for i in range(200))),
        "yaml_too_many_nodes",
    ),
    _front("yaml-not-a-mapping", b"---\n- a\n- b\n---\n", "not_a_mapping"),
    _front("non-utf8", skill_md(description="caf\xe9").replace(b"\xc3\xa9", b"\xe9"), "not_utf8"),
    _front("alias-bomb", _BILLION_LAUGHS, "yaml_alias"),
    _front("duplicate-key", skill_md(extra=f"name: {SLUG}\n"), "yaml_duplicate_key"),
    _front("name-mismatch", skill_md(name="other-skill"), "name_mismatch"),
    _front("missing-name", b"---\ndescription: No name.\n---\n", "missing_name"),
    _front("invalid-name", skill_md(name="Not_A_Slug"), "invalid_name"),
    _front("missing-description", f"---\nname: {SLUG}\n---\n".encode(), "missing_description"),
    _front("empty-description", skill_md(description='""'), "invalid_description"),
    _front("description-too-long", skill_md(description="d" * 1025), "invalid_description"),
    _front("unknown-field", skill_md(extra="version: 1.0\n"), "unknown_field"),
    _front(
        "compatibility-too-long",
        skill_md(extra=f"compatibility: {'c' * 501}\n"),
        "invalid_compatibility",
    ),
    _front(
        "metadata-not-strings",
        skill_md(extra="metadata:\n  nested:\n    a: b\n"),
        "invalid_metadata",
    ),
    # ------------------------------------------------------------ slug
    HostileCase("invalid-slug-case", VALID_FILES, "Corpus-Skill", InvalidName, None),
    HostileCase("invalid-slug-double-hyphen", VALID_FILES, "corpus--skill", InvalidName, None),
    # ------------------------------------------------------------ content
    _secret(
        "aws-key-in-nested-file",
        "references/deploy/config.ini",
        f"[default]\nregion = eu-west-1\naws_access_key_id = {fakes.AWS_ACCESS_KEY_ID}\n".encode(),
        "aws_access_key_id",
    ),
    _secret(
        "aws-secret-key",
        "references/credentials",
        f"aws_secret_access_key={fakes.AWS_SECRET_ACCESS_KEY}\n".encode(),
        "aws_secret_access_key",
    ),
    _secret(
        "private-key-block",
        "assets/deploy_key.pem",
        (fakes.RSA_PRIVATE_KEY + "\n").encode(),
        "private_key",
    ),
    _secret(
        "openssh-key-in-markdown",
        "references/setup.md",
        f"Add this key:\n\n```\n{fakes.OPENSSH_PRIVATE_KEY}\n```\n".encode(),
        "private_key",
    ),
    _secret(
        "github-token-in-script",
        "scripts/publish.sh",
        PackageFile(
            f"#!/bin/sh\nexport GH_TOKEN={fakes.GITHUB_TOKEN}\ngh release create v1\n".encode(),
            executable=True,
        ),
        "github_token",
    ),
    _secret(
        "generic-password",
        "assets/settings.yaml",
        f'database:\n  host: db.internal\n  password: "{fakes.GENERIC_PASSWORD}"\n'.encode(),
        "generic_secret",
    ),
    HostileCase(
        "slack-token-in-skill-md-body",
        _skill(skill_md(body=f"Post with `{fakes.SLACK_TOKEN}`.\n")),
        SLUG,
        ContentBlocked,
        "slack_token",
        "SKILL.md",
    ),
    _secret(
        "aws-key-in-binary",
        "assets/blob.bin",
        b"\x00\xff\xfe\x89PNG\x00" + fakes.AWS_ACCESS_KEY_ID.encode() + b"\x00\xc3\x28",
        "aws_access_key_id",
    ),
    _secret(
        "stripe-key-in-env",
        "scripts/.env",
        f"STRIPE_KEY={fakes.STRIPE_KEY}\n".encode(),
        "stripe_key",
    ),
    _secret(
        "jwt-in-reference",
        "references/api.md",
        f"curl -H 'Authorization: Bearer {fakes.JWT}' https://api.internal\n".encode(),
        "jwt",
    ),
    _secret(
        "anthropic-key-in-python",
        "scripts/client.py",
        f'client = Anthropic(api_key="{fakes.ANTHROPIC_KEY}")\n'.encode(),
        "anthropic_key",
    ),
]
"""Every hostile case; ids are unique."""
