"""Refused input: the request breaks a rule and stores nothing (exit 3, HTTP 4xx)."""

from __future__ import annotations

from dataclasses import dataclass, field

from registry.errors.base import ATTRIBUTE_ONLY, RegistryError, at_path, in_parens

# ---------------------------------------------------------------- refused input (exit 3)


class RefusedInput(RegistryError, code="refused_input"):
    """The input was refused; nothing was stored."""


@dataclass(eq=False, repr=False)
class InvalidName(RefusedInput, code="invalid_name"):
    """A slug, workspace or agent name breaks the naming rules.

    The message and the details name the kind and the rule, never the value: a refusal
    does not echo what it refused (it may be hostile, or a secret typed in the wrong
    place). `value` stays an attribute, for the code that raised or caught it.
    """

    template = "invalid {kind}: {rule}"
    kind: str
    value: str = field(metadata=ATTRIBUTE_ONLY)
    rule: str


@dataclass(eq=False, repr=False)
class ArgumentInvalid(RefusedInput, code="argument_invalid"):
    """An argument of a library call has the wrong type, or a value its rule refuses.

    `argument` names it as the call spells it (`expected_head`, `sources/2`,
    `files['a.txt']`, `PackageFile.executable`); `rule` is a stable name
    (docs/write-path.md, "Arguments"); `detail` says what was found (a type, a position),
    never the value itself.
    """

    argument: str
    rule: str
    detail: str = ""

    def __str__(self) -> str:
        return f"argument {self.argument} refused: {self.rule}{in_parens(self.detail)}"


@dataclass(eq=False, repr=False)
class PathRejected(RefusedInput, code="path_rejected"):
    """A path inside a package breaks a path rule."""

    path: str
    rule: str
    detail: str = ""

    def __str__(self) -> str:
        return f"path {self.path!r} rejected: {self.rule}{in_parens(self.detail)}"


@dataclass(eq=False, repr=False)
class LimitExceeded(RefusedInput, code="limit_exceeded"):
    """A package, or one file in it, is larger than a configured limit."""

    rule: str
    limit: int
    actual: int
    path: str | None = None

    def __str__(self) -> str:
        return f"{self.rule}{at_path(self.path)}: {self.actual} exceeds the limit of {self.limit}"


@dataclass(eq=False, repr=False)
class FrontmatterInvalid(RefusedInput, code="frontmatter_invalid"):
    """`SKILL.md` is missing, or its frontmatter is not valid."""

    path: str = field(default="SKILL.md", init=False)  # always the root's; said for clients
    rule: str
    detail: str = ""
    line: int | None = None

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line is not None else ""
        suffix = f": {self.detail}" if self.detail else ""
        return f"SKILL.md{where} rejected: {self.rule}{suffix}"


@dataclass(eq=False, repr=False)
class ContentBlocked(RefusedInput, code="content_blocked"):
    """A credential-like value was found. The value itself is never carried.

    `path`, `pattern_class` and `ordinal` name the first blocking finding; `findings` lists
    every blocking finding of the write (path, pattern class, ordinal, line), so that an
    owner can approve them all at once (`FindingRef(path, ordinal)`).
    """

    template = "content blocked in {path!r}: finding #{ordinal} looks like a {pattern_class}"
    path: str
    pattern_class: str
    ordinal: int
    findings: list[dict[str, object]] = field(default_factory=list)


@dataclass(eq=False, repr=False)
class LearningIncomplete(RefusedInput, code="learning_incomplete"):
    """A learning write's `SKILL.md` lacks its Steps or a concrete Verification section."""

    template = "learned skill refused: {section} missing ({detail})"
    section: str
    detail: str


@dataclass(eq=False, repr=False)
class CapacityExceeded(RefusedInput, code="capacity_exceeded"):
    """The scope already holds as many skills of this budget as it may."""

    template = "capacity exceeded: at most {limit} {budget} skills per scope"
    limit: int
    budget: str = "saved"


@dataclass(eq=False, repr=False)
class TargetLimitReached(RefusedInput, code="target_limit_reached"):
    """The workspace already has as many materialisation targets as it may register."""

    template = "target limit reached: at most {limit} materialisation targets per workspace"
    limit: int


@dataclass(eq=False, repr=False)
class QuotaExceeded(RefusedInput, code="quota_exceeded"):
    """The workspace's storage quota would be exceeded by this write."""

    template = (
        "storage quota exceeded: {used} bytes used, the write adds {needed}, the limit is {limit}"
    )
    limit: int
    used: int
    needed: int


@dataclass(eq=False, repr=False)
class ArchiveRejected(RefusedInput, code="archive_rejected"):
    """An archive (marketplace import) breaks an extraction rule; nothing was extracted.

    `member` is the entry's name as the archive spells it (decoded leniently for display,
    empty when the rule is about the whole archive); `rule` is a stable name
    (docs/marketplace.md lists them).
    """

    member: str
    rule: str
    detail: str = ""

    def __str__(self) -> str:
        where = f" entry {self.member!r}" if self.member else ""
        return f"archive{where} rejected: {self.rule}{in_parens(self.detail)}"


@dataclass(eq=False, repr=False)
class SourceExcluded(RefusedInput, code="source_excluded"):
    """The write lists a source that is excluded from the workspace."""

    template = "source {source!r} is excluded from this workspace"
    source: str


@dataclass(eq=False, repr=False)
class FindingNotFound(RefusedInput, code="finding_not_found"):
    """An approval names a finding (path and ordinal) that the content check did not find."""

    template = "no finding #{ordinal} in {path!r} to approve"
    path: str
    ordinal: int


@dataclass(eq=False, repr=False)
class TargetInvalid(RefusedInput, code="target_invalid"):
    """A materialisation target cannot be used: not a directory, or its private area is not."""

    path: str
    rule: str
    detail: str = ""

    def __str__(self) -> str:
        return f"target {self.path!r} cannot be used: {self.rule}{in_parens(self.detail)}"


@dataclass(eq=False, repr=False)
class LockFileInvalid(RefusedInput, code="lock_file_invalid"):
    """A lock file is malformed, or does not belong to the scope it is used with."""

    rule: str
    detail: str = ""

    def __str__(self) -> str:
        return f"lock file rejected: {self.rule}" + (f": {self.detail}" if self.detail else "")


@dataclass(eq=False, repr=False)
class BlobDigestMismatch(RefusedInput, code="digest_mismatch"):
    """Uploaded bytes do not hash to the digest they were sent under; nothing was stored."""

    template = "digest mismatch: the bytes sent as {expected} hash to {actual}"
    expected: str
    actual: str


@dataclass(eq=False, repr=False)
class ManifestInvalid(RefusedInput, code="manifest_invalid"):
    """A manifest sent by a client is malformed or contradicts the blobs it names."""

    rule: str
    detail: str
    path: str | None = None

    def __str__(self) -> str:
        return f"manifest rejected{at_path(self.path)}: {self.rule} ({self.detail})"


@dataclass(eq=False, repr=False)
class BlobsMissing(RefusedInput, code="blobs_missing"):
    """A manifest names blobs this workspace has not uploaded (or may not see).

    Content addressing is global, so a digest alone is no proof of having the bytes: a
    manifest may only name blobs the workspace uploaded or already references.
    """

    digests: list[str]

    def __post_init__(self) -> None:
        self.digests = sorted(self.digests)  # the same details whatever order they were found
        super().__post_init__()

    def __str__(self) -> str:
        n = len(self.digests)
        return f"{n} blobs named by the manifest were not uploaded to this workspace"


@dataclass(eq=False, repr=False)
class RemoteRefused(RefusedInput, code="remote_refused"):
    """What a registry sent to a host that syncs from it breaks a host-side rule.

    A host trusts nothing it cannot check (docs/trust.md): `what` names the request or
    the item (`GET .../desired`, `slug '...'`, `url`), `rule` is a stable name
    (docs/sync.md, "What a host refuses"), `detail` says what was found. Nothing on the
    host changed for the refused item.
    """

    what: str
    rule: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.what} refused: {self.rule}{in_parens(self.detail)}"


@dataclass(eq=False, repr=False)
class AttestationInvalid(RefusedInput, code="attestation_invalid"):
    """A version's attestation does not verify (docs/trust.md).

    Malformed, signed by no trusted key, a signature that does not check out, or a
    statement about other files; `rule` names which.
    """

    rule: str
    detail: str = ""

    def __str__(self) -> str:
        return f"attestation refused: {self.rule}{in_parens(self.detail)}"
