"""Signing in and out; the console's front door."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Request
from starlette.responses import Response

from registry.console.render import url
from registry.console.routing import (
    ConsoleRoute,
    console_of,
    field,
    form_of,
    page,
    registry_of,
    see_other,
    session_of,
    set_session,
)
from registry.errors import Unauthenticated
from registry.http.throttle import client_address, failures_of, seconds

router = APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)


def _next_or(target: str, default: str) -> str:
    # Only a console path: a link cannot send a signed-in owner to another site.
    if target.startswith(url("")) and not target.startswith("//"):
        return target
    return default


# The entrance, with its slash and without: the app makes no slash redirects of its own
# (Starlette's would name the request's `Host`; `registry/http/app.py`).
@router.get("", name="console_home")
@router.get("/", name="console_home")
async def home(request: Request) -> Response:
    viewer = request.state.viewer
    if viewer is None:
        return see_other(url("signin"))
    return see_other(url(viewer.workspace, ""))


@router.get("/signin", name="console_signin_form")
async def signin_form(request: Request, next: str = "") -> Response:  # noqa: A002 - the query's name
    return page(request, "signin.html", title="Sign in", next=next)


@router.post("/signin", name="console_signin")
async def signin(request: Request) -> Response:
    form = await form_of(request)
    target = field(form, "next")
    # The API's count of wrong tokens per address (registry/http/throttle.py): the form is
    # no way around it.
    failures, address = failures_of(request), client_address(request)
    wait = failures.retry_after(address)
    if wait is not None:
        answer = page(
            request,
            "signin.html",
            status=429,
            title="Sign in",
            next=target,
            error="Too many tokens from this address were not accepted. Try again later.",
        )
        answer.headers["Retry-After"] = str(seconds(wait))
        return answer
    try:
        token = await registry_of(request).tokens.authenticate(field(form, "token").strip())
    except Unauthenticated:
        failures.failed(address)
        return page(
            request,
            "signin.html",
            status=401,
            title="Sign in",
            next=target,
            error="That token was not accepted: it is unknown, revoked or mistyped.",
        )
    sessions = console_of(request).sessions
    # A new session id at sign-in: an id planted in this browser beforehand is worthless.
    set_session(request, sessions.new(token_id=token.id, workspace=token.workspace))
    return see_other(_next_or(target, url(token.workspace, "")))


@router.post("/signout", name="console_signout")
async def signout(request: Request) -> Response:
    session = session_of(request)
    if session.signed_in:
        # Ended on the server, not only in this browser: a copy of the cookie taken before
        # is refused from now on, by every process sharing the database.
        ends_at = datetime.fromtimestamp(session.expires, UTC)
        await registry_of(request).tokens.end_console_session(session.id, ends_at=ends_at)
    set_session(request, console_of(request).sessions.new())
    return see_other(url("signin"))
