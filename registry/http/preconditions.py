"""Compare-and-swap in HTTP terms: entity tags, `If-Match` and `If-None-Match`.

A skill's entity tag names its head: `"<version>.<16 hex>"`, the hex being a BLAKE3 of
the skill row's id, the version number and the manifest hash. It changes whenever the
head changes, and a skill that was deleted and created again under the same slug has a
new row id, so its tags never equal the old skill's even at the same version and content.
A pinned version's representation carries the tag of that version, which equals the
skill's tag exactly while that version is the head.

Writes are conditional, always:
- `If-Match: "<tag>"` (or a list): the head must still be the one tagged; the write then
  runs as a compare-and-swap on that head number, so a writer that slips in between the
  check and the write still makes it fail. `If-Match: *`: the skill must exist.
- `If-None-Match: *`: create; the skill must not exist.
- neither: 428 Precondition Required. Both: `If-Match` decides (RFC 9110, 13.2.2).
A failed precondition answers 412 with the current tag (header and body).

A decision on a proposal whose skill was deleted has no tag to name
(`deleted_skill_precondition`): applying it creates the skill, so it takes
`If-None-Match: *`; keeping it out changes no skill and needs no precondition.

A restore that brings a deleted skill back (`revival_precondition`) takes `If-Match` with
the tag of the deleted skill's last version (its representation, `GET .../versions/{n}
?skill_id=`, carries it), a compare-and-swap on that head; or `If-None-Match: *`, which
asks only that the slug be free (the restore refuses a taken slug with 409 either way).

A publish or a restore whose `If-Match` names an earlier head may be a retry whose reply
was lost: RFC 9110 (13.1.1) lets a server answer 2xx when the requested change was already
made. Such a write goes to the write path with `ALREADY_APPLIED` as its expected head, a
number no head ever has: it succeeds only by finding its exact package at the head
(nothing is written, `unchanged` is true), and otherwise gets the stale tag's 412.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from blake3 import blake3
from fastapi import Request

from registry.api import Registry
from registry.domain.model import ANY, AnyHead, Scope
from registry.domain.numbers import MAX_VERSION, decimal
from registry.errors import ArchivedSkillNotFound, HeadConflict, SkillExists, SkillNotFound
from registry.http.problems import HttpProblem

_TAG: Final = re.compile(r'\s*(W/)?"([^"]*)"\s*')
# An expected head no skill ever has (versions start at 1); see the module docstring.
ALREADY_APPLIED: Final = 0


def entity_tag(skill_id: int, version: int, manifest_hash: str) -> str:
    """The strong entity tag of a skill whose head is `version` (quotes included)."""
    token = blake3(f"{skill_id}:{version}:{manifest_hash}".encode()).hexdigest()[:16]
    return f'"{version}.{token}"'


def tag_version(tag: str) -> int | None:
    """The version number a tag names, if it is shaped like one of ours (bounded first)."""
    head, sep, _ = tag.strip('"').partition(".")
    return decimal(head, MAX_VERSION) if sep else None


@dataclass(frozen=True)
class Condition:
    """A parsed precondition header: `*`, or the strong tags it lists."""

    any: bool
    tags: tuple[str, ...]

    def matches(self, tag: str) -> bool:
        return self.any or tag in self.tags


def parse_condition(value: str) -> Condition:
    """Parse `*` or a comma-separated list of entity tags; weak tags never match."""
    if value.strip() == "*":
        return Condition(any=True, tags=())
    tags: list[str] = []
    for part in value.split(","):
        match = _TAG.fullmatch(part)
        if match is None:
            raise HttpProblem("precondition_invalid", f"not an entity tag: {part.strip()[:80]!r}")
        if match[1] is None:  # a weak tag cannot satisfy a strong comparison
            tags.append(f'"{match[2]}"')
    return Condition(any=False, tags=tuple(tags))


@dataclass(frozen=True)
class Head:
    """A skill's current head as the HTTP layer tags it."""

    version: int
    etag: str


async def current_head(registry: Registry, scope: Scope, slug: str) -> Head | None:
    """The head of `slug`, or None if there is no such skill."""
    try:
        info = await registry.package_info(scope, slug)
    except SkillNotFound:
        return None
    return Head(info.version, entity_tag(info.skill_id, info.version, info.manifest_hash))


def precondition_failed(
    conflict: HeadConflict, head: Head | None, detail: str | None = None
) -> HttpProblem:
    """The 412 for a lost compare-and-swap, carrying the current tag and head."""
    extra = {
        "details": conflict.details(),
        "current_etag": None if head is None else head.etag,
        "current_head": None if head is None else head.version,
    }
    headers = {} if head is None else {"ETag": head.etag}
    return HttpProblem(
        conflict.code, detail or str(conflict), status=412, extra=extra, headers=headers
    )


async def lost_precondition(
    request: Request,
    registry: Registry,
    scope: Scope,
    slug: str,
    *,
    conflict: HeadConflict,
    expected: int | None,
) -> HttpProblem:
    """The 412 for a conditional write whose compare-and-swap lost.

    A write sent with `ALREADY_APPLIED` that did not find its package at the head gets
    the 412 its stale `If-Match` gets (raised here); any other, the current head's.
    """
    if expected == ALREADY_APPLIED:
        await expected_head(request, registry, scope, slug, allow_create=True)
    return precondition_failed(conflict, await current_head(registry, scope, slug))


async def expected_head(
    request: Request,
    registry: Registry,
    scope: Scope,
    slug: str,
    *,
    allow_create: bool,
    already_applied_ok: bool = False,
) -> int | None:
    """The head version a conditional write expects (None: a create), or a 412/428.

    `already_applied_ok`: a stale `If-Match` returns `ALREADY_APPLIED` instead of a 412
    (a publish or restore, whose retry finds its package at the head; see the module
    docstring).
    """
    if_match = request.headers.get("if-match")
    if_none_match = request.headers.get("if-none-match")
    if if_match is not None:
        condition = parse_condition(if_match)
        head = await current_head(registry, scope, slug)
        if head is None:
            raise HttpProblem(
                "precondition_failed",
                f"If-Match: the skill {slug!r} does not exist",
                extra={"current_etag": None, "current_head": None},
            )
        if not condition.matches(head.etag):
            if already_applied_ok and condition.tags:
                return ALREADY_APPLIED
            wanted = next((tag_version(t) for t in condition.tags), None)
            detail = (
                f"If-Match {if_match.strip()[:100]} does not match the current ETag {head.etag} "
                f"(head version {head.version})"
            )
            raise precondition_failed(HeadConflict(wanted, head.version), head, detail)
        return head.version
    if if_none_match is not None and allow_create:
        if if_none_match.strip() != "*":
            raise HttpProblem("precondition_invalid", "a create takes If-None-Match: * only")
        return None
    needed = "If-Match or If-None-Match: *" if allow_create else "If-Match"
    raise HttpProblem("precondition_required", f"this write needs {needed}")


async def deleted_head(registry: Registry, scope: Scope, slug: str, skill_id: int) -> Head:
    """The last version of the deleted skill `skill_id` of `slug`, tagged as its head."""
    page = await registry.history(scope, slug, skill_id=skill_id, limit=1)
    last = page.items[0]
    if not last.archived:
        raise ArchivedSkillNotFound(scope.workspace, scope.agent, slug, skill_id)
    return Head(last.number, entity_tag(skill_id, last.number, last.manifest_hash))


async def revival_precondition(
    request: Request, registry: Registry, scope: Scope, slug: str, skill_id: int
) -> int | AnyHead:
    """The expected head of a restore that brings the deleted skill `skill_id` back.

    See the module docstring: `If-Match` (the deleted head's tag; 412 with that tag if it
    does not match), `If-None-Match: *` (`ANY`: only a free slug), neither: 428.
    """
    if_match = request.headers.get("if-match")
    if if_match is not None:
        condition = parse_condition(if_match)
        head = await deleted_head(registry, scope, slug, skill_id)
        if not condition.matches(head.etag):
            wanted = next((tag_version(t) for t in condition.tags), None)
            raise precondition_failed(HeadConflict(wanted, head.version), head)
        return head.version
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None:
        if if_none_match.strip() != "*":
            raise HttpProblem("precondition_invalid", "a free slug is If-None-Match: * only")
        return ANY
    raise HttpProblem(
        "precondition_required",
        "bringing a deleted skill back needs If-Match (its last version's ETag) "
        "or If-None-Match: *",
    )


async def deleted_skill_precondition(
    request: Request, registry: Registry, scope: Scope, slug: str, *, writes: bool
) -> None:
    """The precondition of a decision on a proposal whose skill was deleted (it has no tag).

    `If-Match` is evaluated as for any write (412: no skill holds the slug, or the tag is
    not its head's). `If-None-Match: *` holds while no skill holds the slug (412
    `skill_exists` with the new skill's tag otherwise; the apply itself is a create, so
    a skill made in between still makes it fail). Neither: 428 if the decision `writes`
    a version (apply, alternative); none is needed to keep the proposal out.
    """
    if request.headers.get("if-match") is not None:
        await expected_head(request, registry, scope, slug, allow_create=False)
        return
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None:
        if if_none_match.strip() != "*":
            raise HttpProblem("precondition_invalid", "a create takes If-None-Match: * only")
        head = await current_head(registry, scope, slug)
        if head is not None:
            raise precondition_failed(SkillExists(slug, head.version), head)
        return
    if writes:
        raise HttpProblem(
            "precondition_required",
            f"the skill {slug!r} was deleted: applying its proposal creates it, "
            "and needs If-None-Match: *",
        )
