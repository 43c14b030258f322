"""Console sessions: a signed cookie, and the CSRF token every form carries.

The cookie holds no secret of the token it was opened with: a random session id, the
token's id and workspace, and when the session ends, signed with HMAC-SHA256 under the
console key (`SKILLREG_CONSOLE_SECRET`; without it each process draws one at start). Every
request looks the token up again (`access.py`), so revoking a token ends its console
sessions at once, and a stolen cookie is no bearer token for the API.

Forms carry a CSRF token: the HMAC of the session id under the same key, compared in
constant time on every POST. A visitor who is not signed in still has a session (its id
only), so the sign-in form is protected too; signing in draws a new session id, so a
session id planted before the sign-in is worth nothing after it. The cookie is
`HttpOnly`, `SameSite=Strict`, path `/console`, and `Secure` when the request came over
HTTPS (behind a proxy: uvicorn's `--proxy-headers`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Final

from starlette.requests import Request
from starlette.responses import Response

COOKIE: Final = "skillreg_console"
COOKIE_PATH: Final = "/console"
_VERSION: Final = "v1"


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


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Sessions:
    """Makes, signs, verifies and sets session cookies under one key."""

    def __init__(self, key: bytes, *, lifetime: float) -> None:
        if len(key) < 16:  # noqa: PLR2004 - a shorter key could be guessed
            msg = "the console key needs at least 16 bytes"
            raise ValueError(msg)
        self._key = hashlib.sha256(b"skillreg console\x00" + key).digest()
        self.lifetime = lifetime

    def _mac(self, purpose: bytes, data: bytes) -> bytes:
        return hmac.new(self._key, purpose + b"\x00" + data, hashlib.sha256).digest()

    def new(self, *, token_id: str | None = None, workspace: str | None = None) -> Session:
        """A fresh session with a new id (signed in if `token_id` is given)."""
        expires = int(time.time() + self.lifetime)
        return Session(secrets.token_urlsafe(18), expires, token_id, workspace)

    def encode(self, session: Session) -> str:
        payload = json.dumps(
            {"s": session.id, "e": session.expires, "t": session.token_id, "w": session.workspace},
            separators=(",", ":"),
        ).encode()
        body = f"{_VERSION}.{_b64(payload)}"
        return f"{body}.{_b64(self._mac(b'cookie', body.encode()))}"

    def decode(self, cookie: str | None) -> Session | None:
        """The session a cookie carries, or None if it is missing, forged or expired."""
        if not cookie or cookie.count(".") != 2:  # noqa: PLR2004 - version, payload, mac
            return None
        version, payload, mac = cookie.split(".")
        body = f"{version}.{payload}"
        try:
            valid = hmac.compare_digest(_unb64(mac), self._mac(b"cookie", body.encode()))
            data = json.loads(_unb64(payload)) if valid and version == _VERSION else None
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(data, dict):
            return None
        session = Session(
            id=str(data.get("s", "")),
            expires=int(data.get("e", 0)),
            token_id=data.get("t"),
            workspace=data.get("w"),
        )
        if not session.id or session.expires < time.time():
            return None
        return session

    def csrf_token(self, session: Session) -> str:
        """The CSRF token of the forms of `session`."""
        return _b64(self._mac(b"csrf", session.id.encode()))

    def csrf_valid(self, session: Session, submitted: str | None) -> bool:
        if not submitted:
            return False
        return hmac.compare_digest(submitted.encode(), self.csrf_token(session).encode())

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
