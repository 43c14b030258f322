"""`reg.tokens`: the access tokens of the HTTP service.

A token belongs to one workspace and carries one role; its secret is shown once, when it
is created, and only a hash of it is stored. The console's sessions are opened with a
token; a session signed out is recorded, so that no process takes its cookie again.
"""

from __future__ import annotations

from datetime import datetime

from registry.services.context import Context
from registry.services.ops import tokens
from registry.services.ops.tokens import IssuedToken, TokenInfo

# In the class body, `list` names the method `Tokens.list`: mypy rejects `list[...]` in any
# annotation after it, so the list type is spelled here, outside.
TokenList = list[TokenInfo]


class Tokens:
    """The access tokens of one registry: `reg.tokens`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    async def create(self, workspace: str, role: str, *, name: str = "", actor: str) -> IssuedToken:
        """Create an HTTP access token; `IssuedToken.token` is shown once and never stored."""
        return await tokens.create_token(self.ctx, workspace, role, name=name, actor=actor)

    async def revoke(self, token_id: str, *, actor: str) -> TokenInfo:
        """Revoke a token (idempotent; `TokenNotFound` if there is none)."""
        return await tokens.revoke_token(self.ctx, token_id, actor=actor)

    async def list(self, workspace: str, *, include_revoked: bool = False) -> TokenList:
        """The tokens of a workspace (never their secrets)."""
        return await tokens.list_tokens(self.ctx, workspace, include_revoked=include_revoked)

    async def authenticate(self, bearer: str) -> TokenInfo:
        """The live token a bearer string names, or `Unauthenticated`."""
        return await tokens.authenticate(self.ctx, bearer)

    async def console_session(self, session_id: str, token_id: str) -> TokenInfo | None:
        """The live token of a console session; None if revoked, unknown or signed out."""
        return await tokens.console_session(self.ctx, session_id, token_id)

    async def end_console_session(self, session_id: str, *, ends_at: datetime) -> None:
        """Record a console session as signed out (`ends_at`: when its cookie expires)."""
        await tokens.end_console_session(self.ctx, session_id, ends_at=ends_at)
