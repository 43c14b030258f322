"""Console sessions: a signed cookie, and the CSRF token every form carries.

The cookie holds no secret of the token it was opened with: a random session id, the
token's id and workspace, signed with a timestamp by itsdangerous (`URLSafeTimedSerializer`,
HMAC-SHA256) under the console keys. A session ends `lifetime` seconds after its cookie was
signed: the signature's timestamp is the one clock, so shortening the lifetime shortens the
sessions already open. Every request looks the token up again (`access.py`), so revoking a
token ends its console sessions at once, and a stolen cookie is no bearer token for the API.

Keys rotate: the first key signs, every key verifies (`SKILLREG_CONSOLE_SECRET`, then
`SKILLREG_CONSOLE_PREVIOUS_SECRETS`; without a secret each process draws one at start), so
cookies and forms signed before a rotation stay valid until the old key is dropped
(docs/console.md, "Rotating the key").

Forms carry a CSRF token: a signature of the session id under the same keys (another salt,
so it is never a valid cookie), checked on every POST. A visitor who is not signed in still
has a session (its id only), so the sign-in form is protected too; signing in draws a new
session id, so a session id planted before the sign-in is worth nothing after it. The
cookie is `HttpOnly`, `SameSite=Strict`, path `/console`, and `Secure` when the request
came over HTTPS (behind a proxy: one `SKILLREG_FORWARDED_ALLOW_IPS` names).

Signing out ends the session on the server too: its id is recorded in the database
(`reg.tokens.end_console_session`), and the request cycle refuses a session whose id is
there (`routing.py`), so a copy of the cookie taken before is worth nothing, in every
process sharing the database. The signature still verifies: the record, not the cookie,
says the session ended.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from itsdangerous import BadData, Signer, URLSafeTimedSerializer
from starlette.requests import Request
from starlette.responses import Response

COOKIE: Final = "skillreg_console"
COOKIE_PATH: Final = "/console"
MIN_KEY_BYTES: Final = 16
"""The shortest key accepted: a shorter one could be guessed."""

# Salts keep the two signatures apart: a CSRF token is never a cookie, nor the reverse.
_COOKIE_SALT: Final = "skillreg console session"
_CSRF_SALT: Final = "skillreg console csrf"


@dataclass(frozen=True)
class Session:
    """One browser's session: `token_id` and `workspace` are set once it signed in."""

    id: str
    expires: int
    token_id: str | None = None
    workspace: str | None = None

    @property
    def signed_in(self) -> bool:
        return self.token_id is not None


class Sessions:
    """Makes, signs, verifies and sets session cookies under a list of keys.

    `keys[0]` signs; every key verifies (the others are the keys it replaced).
    """

    def __init__(self, keys: Sequence[bytes], *, lifetime: float) -> None:
        if not keys:
            msg = "the console needs a key"
            raise ValueError(msg)
        if any(len(key) < MIN_KEY_BYTES for key in keys):
            msg = f"a console key needs at least {MIN_KEY_BYTES} bytes"
            raise ValueError(msg)
        # itsdangerous signs with the last key of its list and verifies with all of them.
        oldest_first = list(reversed(keys))
        self._cookies = URLSafeTimedSerializer(
            oldest_first, salt=_COOKIE_SALT, signer_kwargs={"digest_method": hashlib.sha256}
        )
        # One signer per key: a form's token is compared whole with each key's, where
        # itsdangerous's own check would skip characters base64 does not use.
        self._csrf = [Signer(key, salt=_CSRF_SALT, digest_method=hashlib.sha256) for key in keys]
        self.lifetime = lifetime

    def new(self, *, token_id: str | None = None, workspace: str | None = None) -> Session:
        """A fresh session with a new id (signed in if `token_id` is given)."""
        expires = int(time.time() + self.lifetime)
        return Session(secrets.token_urlsafe(18), expires, token_id, workspace)

    def encode(self, session: Session) -> str:
        """The cookie of `session`, signed now with the newest key."""
        return self._cookies.dumps({"s": session.id, "t": session.token_id, "w": session.workspace})

    def decode(self, cookie: str | None) -> Session | None:
        """The session a cookie carries, or None if it is missing, forged or expired."""
        if not cookie:
            return None
        try:
            data, signed = self._cookies.loads(
                cookie, max_age=int(self.lifetime), return_timestamp=True
            )
        except BadData:  # a bad signature, an expired one, a payload that is not JSON
            return None
        if not isinstance(data, dict):
            return None
        session_id, token_id, workspace = data.get("s"), data.get("t"), data.get("w")
        if not isinstance(session_id, str) or not session_id:
            return None
        if not all(value is None or isinstance(value, str) for value in (token_id, workspace)):
            return None
        expires = int(signed.timestamp() + self.lifetime)
        return Session(session_id, expires, token_id, workspace)

    def csrf_token(self, session: Session) -> str:
        """The CSRF token of the forms of `session`, signed with the newest key."""
        return self._csrf[0].get_signature(session.id).decode("ascii")

    def csrf_valid(self, session: Session, submitted: str | None) -> bool:
        """Whether `submitted` is exactly a CSRF token of `session` under one of the keys."""
        if not submitted:
            return False
        given = submitted.encode("utf-8", "replace")
        return any(
            hmac.compare_digest(given, signer.get_signature(session.id)) for signer in self._csrf
        )

    def set_cookie(self, response: Response, request: Request, session: Session) -> None:
        response.set_cookie(
            COOKIE,
            self.encode(session),
            max_age=max(0, session.expires - int(time.time())),
            path=COOKIE_PATH,
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="strict",
        )

    def clear_cookie(self, response: Response, request: Request) -> None:
        response.delete_cookie(
            COOKIE,
            path=COOKIE_PATH,
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="strict",
        )
