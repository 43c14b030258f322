"""Lock files: the exact package of every skill a scope uses, to reproduce an agent's setup.

    {
      "format": "skillreg-lock-v1",
      "workspace": "acme",
      "agent": "personal",
      "skills": [
        {"slug": "pdf-report", "version": 3, "manifest_hash": "1f0c…"}
      ]
    }

`skillreg lock` writes one from the heads of the skills in use; `skillreg reconcile --lock`
materialises exactly those versions (and removes every other skill from the target),
checking each manifest hash against the registry, so two targets reconciled from one lock
file hold the same bytes. The encoding is canonical (sorted keys, skills by slug, no
timestamps): the same state always gives the same file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import keys as db_keys
from registry.db import materializations as db_materializations
from registry.domain.model import Scope, check_slug
from registry.errors import InvalidName, LockFileInvalid
from registry.services.context import Context

FORMAT: Final = "skillreg-lock-v1"
_HASH: Final = re.compile(r"[0-9a-f]{64}")
MAX_LOCK_BYTES: Final = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class LockedSkill:
    """One pinned skill: its slug, version and the manifest hash that version has."""

    slug: str
    version: int
    manifest_hash: str
    # The SHA-256 of the version's attestation (docs/trust.md): how a host names the
    # signed statement that pins who wrote it. None for a version published unsigned.
    attestation: str | None = None


@dataclass(frozen=True)
class LockFile:
    """The pinned packages of one scope."""

    workspace: str
    agent: str
    skills: tuple[LockedSkill, ...]

    @property
    def scope(self) -> Scope:
        return Scope(self.workspace, self.agent)

    def dumps(self) -> str:
        """The canonical text of the lock file."""
        body = {
            "format": FORMAT,
            "workspace": self.workspace,
            "agent": self.agent,
            "skills": [
                {"slug": s.slug, "version": s.version, "manifest_hash": s.manifest_hash}
                | ({} if s.attestation is None else {"attestation": s.attestation})
                for s in sorted(self.skills, key=lambda s: s.slug)
            ],
        }
        return json.dumps(body, indent=2, sort_keys=True) + "\n"

    @classmethod
    def loads(cls, text: str | bytes) -> LockFile:
        """Parse and check a lock file (`LockFileInvalid` names the first problem)."""
        if len(text) > MAX_LOCK_BYTES:
            raise LockFileInvalid("too_large", f"more than {MAX_LOCK_BYTES} bytes")
        try:
            body = json.loads(text)
        except ValueError as exc:
            raise LockFileInvalid("not_json", str(exc)) from None
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise LockFileInvalid("format", f"expected format {FORMAT!r}")
        try:
            scope = Scope(_text(body, "workspace"), _text(body, "agent"))
        except InvalidName as exc:
            raise LockFileInvalid("scope", str(exc)) from None
        raw = body.get("skills")
        if not isinstance(raw, list):
            raise LockFileInvalid("skills", "expected a list of skills")
        skills = [_skill(i, item) for i, item in enumerate(raw)]
        slugs = [s.slug for s in skills]
        if len(set(slugs)) != len(slugs):
            raise LockFileInvalid("duplicate_slug", "a slug appears twice")
        return cls(scope.workspace, scope.agent, tuple(sorted(skills, key=lambda s: s.slug)))

    def check_scope(self, scope: Scope) -> None:
        """Refuse to use this lock file for another scope than its own."""
        if (self.workspace, self.agent) != (scope.workspace, scope.agent):
            raise LockFileInvalid(
                "scope_mismatch", f"the lock file is for {self.scope}, not {scope}"
            )


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise LockFileInvalid(key, f"expected a string {key!r}")
    return value


def _skill(index: int, item: object) -> LockedSkill:
    where = f"skills[{index}]"
    if not isinstance(item, dict):
        raise LockFileInvalid("skills", f"{where} is not an object")
    slug, version, digest = item.get("slug"), item.get("version"), item.get("manifest_hash")
    if not isinstance(slug, str):
        raise LockFileInvalid("slug", f"{where}.slug is not a string")
    try:
        check_slug(slug)
    except InvalidName as exc:
        raise LockFileInvalid("slug", f"{where}: {exc}") from None
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise LockFileInvalid("version", f"{where}.version is not a positive integer")
    if not isinstance(digest, str) or not _HASH.fullmatch(digest):
        raise LockFileInvalid("manifest_hash", f"{where}.manifest_hash is not 64 hex digits")
    sealed = item.get("attestation")
    if sealed is not None and not (isinstance(sealed, str) and _HASH.fullmatch(sealed)):
        raise LockFileInvalid("attestation", f"{where}.attestation is not 64 hex digits")
    return LockedSkill(slug, version, digest, sealed)


async def make_lock(ctx: Context, scope: Scope) -> LockFile:
    """A lock file of the head of every skill of `scope` that is in use."""

    async def work(conn: AsyncConnection) -> list[db_materializations.HeadRow]:
        return await db_materializations.heads(conn, scope)

    async def work_signed(
        conn: AsyncConnection,
    ) -> tuple[list[db_materializations.HeadRow], dict[int, str]]:
        heads = await work(conn)
        signed = await db_keys.digests_of_heads(conn, [h.skill_id for h in heads if h.in_use])
        return heads, signed

    heads, signed = await ctx.read(work_signed)
    return LockFile(
        scope.workspace,
        scope.agent,
        tuple(
            LockedSkill(h.slug, h.version, h.manifest_hash, signed.get(h.skill_id))
            for h in heads
            if h.in_use
        ),
    )
