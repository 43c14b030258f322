"""The console's request cycle: session, CSRF, access, errors and security headers.

Every console route is a `ConsoleRoute`. Around the endpoint it:
1. reads the session cookie (a visitor without one gets a fresh session);
2. on a POST, parses the form once and refuses it (403) unless it carries the session's
   CSRF token;
3. finds the signed-in token again (a revoked token, or a session signed out, is no
   longer signed in) and applies the route's entry of `access.ROLES` (sign in first;
   another workspace: 404; a lower role: 403);
4. turns a registry error the endpoint did not handle into an HTML page with the API's
   status code for it (`registry.http.problems.status_for`);
5. sets the cookie when the session changed and adds the security headers (a strict
   Content-Security-Policy: no inline script or style, nothing from another origin).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, Final

from fastapi import Request
from fastapi.routing import APIRoute
from jinja2 import Environment
from starlette.datastructures import FormData
from starlette.responses import HTMLResponse, RedirectResponse, Response

from registry.api import Registry
from registry.console.access import ROLES, Viewer
from registry.console.render import environment, render, url
from registry.console.session import COOKIE, Session, Sessions
from registry.errors import RegistryError
from registry.http.problems import status_for
from registry.settings import Settings

_log = logging.getLogger("registry.console")

HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
# What a page says after the action that redirected to it (`?notice=CODE`); only these.
NOTICES: Final[Mapping[str, str]] = {
    "edited": "Saved: the edit is the new head.",
    "restored": "Restored: the version is the new head.",
    "unchanged": "Nothing changed: the head already has that package.",
    "yanked": "Revoked: that version is never served for use again.",
    "unyanked": "The revocation was taken back; the head did not move.",
    "pause": "Learning paused: automated changes become proposals.",
    "resume": "Learning resumed.",
    "stop_using": "Stopped: runtimes no longer load this skill.",
    "resume_use": "In use again.",
    "auto_improve_on": "Automatic improvements are on.",
    "auto_improve_off": "Automatic improvements are off: automated changes become proposals.",
    "deleted": "Deleted. Its versions are kept, listed as archived.",
    "approved": "Findings approved for that version.",
    "applied": "Applied: the proposal is the new head.",
    "alternative": "Your alternative is the new head.",
    "kept": "Kept the current version; the proposal is closed.",
    "signed_out": "Signed out.",
}
# Form fields of a multipart edit hold a whole file; the body limit bounds the request.
_FORM_PART_SLACK: Final = 64 * 1024


class Console:
    """What the console keeps for the app's lifetime: the registry, sessions, templates."""

    def __init__(self, registry: Registry, settings: Settings) -> None:
        self.registry = registry
        secret = settings.console_secret
        if secret is None:
            _log.info("no SKILLREG_CONSOLE_SECRET: console sessions end when this process stops")
            key = secrets.token_bytes(32)
        else:
            key = secret.get_secret_value().encode()
        previous = [old.get_secret_value().encode() for old in settings.console_previous_secrets]
        self.sessions = Sessions([key, *previous], lifetime=settings.console_session_hours * 3600)
        self.env: Environment = environment()
        self.max_part_size = settings.max_file_bytes + _FORM_PART_SLACK


class Refused(Exception):
    """Ends a request early with `response` (a redirect, a 403 or 404 page)."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def console_of(request: Request) -> Console:
    console: Console = request.app.state.console
    return console


def registry_of(request: Request) -> Registry:
    """The registry, acting for the signed-in viewer's token when there is one.

    The versions an owner saves in the console record and sign that token.
    """
    registry = console_of(request).registry
    viewer: Viewer | None = getattr(request.state, "viewer", None)
    return registry if viewer is None else registry.acting_as(f"token:{viewer.token.id}")


def viewer_of(request: Request) -> Viewer:
    """The signed-in viewer (the route's role check has run)."""
    viewer: Viewer | None = request.state.viewer
    assert viewer is not None, "a route that needs a role has a viewer"
    return viewer


def session_of(request: Request) -> Session:
    session: Session = request.state.session
    return session


def set_session(request: Request, session: Session) -> None:
    """Replace the request's session; the response sets the cookie."""
    request.state.session = session
    request.state.session_changed = True


async def form_of(request: Request) -> FormData:
    return await request.form(max_part_size=console_of(request).max_part_size)


def field(form: FormData, name: str, default: str = "") -> str:
    value = form.get(name)
    return value if isinstance(value, str) else default


def page(request: Request, template: str, *, status: int = 200, **context: Any) -> HTMLResponse:
    """The page `template` rendered for this request's viewer."""
    console = console_of(request)
    viewer: Viewer | None = getattr(request.state, "viewer", None)
    params = request.path_params
    base: dict[str, Any] = {
        "request": request,
        "viewer": viewer,
        "csrf": console.sessions.csrf_token(session_of(request)),
        "workspace": viewer.workspace if viewer else None,
        "notice": NOTICES.get(request.query_params.get("notice", "")),
    }
    if {"workspace", "agent", "slug"} <= params.keys():
        base["base_url"] = skill_url(params["workspace"], params["agent"], params["slug"])
    return HTMLResponse(render(console.env, template, base | context), status_code=status)


def skill_url(workspace: str, agent: str, slug: str, *rest: object, **query: object) -> str:
    """The URL of a skill's page, or of one of its subpages (`rest`)."""
    return url(workspace, "agents", agent, "skills", slug, *rest, **query)


def message_page(request: Request, status: int, title: str, message: str) -> HTMLResponse:
    return page(request, "message.html", status=status, title=title, message=message)


def see_other(location: str) -> RedirectResponse:
    """Post/redirect/get: the browser fetches `location` with a GET."""
    return RedirectResponse(location, status_code=303)


def _safe_next(target: str | None) -> str | None:
    if target and target.startswith(url("")) and not target.startswith("//"):
        return target
    return None


def signin_redirect(request: Request) -> RedirectResponse:
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return see_other(url("signin", next=here if request.method == "GET" else None))


async def _find_viewer(request: Request, session: Session) -> Viewer | None:
    # On every request: a revoked token, or a session signed out (in any process sharing
    # the database), is no viewer, whatever the cookie's signature says.
    if session.token_id is None or session.workspace is None:
        return None
    token = await registry_of(request).tokens.console_session(session.id, session.token_id)
    if token is None or token.workspace != session.workspace:
        return None
    return Viewer(token)


def _check(request: Request, viewer: Viewer | None, name: str) -> None:
    needed = ROLES[name]
    if needed is None:
        return
    if viewer is None:
        raise Refused(signin_redirect(request))
    workspace = request.path_params.get("workspace")
    if workspace is not None and workspace != viewer.workspace:
        raise Refused(message_page(request, 404, "Not found", "There is nothing here."))
    if not viewer.may(needed):
        raise Refused(
            message_page(
                request,
                403,
                "Not allowed",
                f"This needs a {needed.value} token; you signed in with a "
                f"{viewer.role.value} token.",
            )
        )


def error_page(request: Request, exc: RegistryError) -> HTMLResponse:
    status = status_for(exc)
    if status >= 500:  # noqa: PLR2004 - server errors: the log has the details
        _log.error("console request failed", exc_info=exc)
        return message_page(request, status, "Something went wrong", "The log has the details.")
    return message_page(request, status, _TITLES.get(status, "Refused"), str(exc))


_TITLES: Final[Mapping[int, str]] = {
    404: "Not found",
    409: "Conflict",
    412: "Changed meanwhile",
    413: "Too large",
    422: "Refused",
    429: "Busy",
}


class ConsoleRoute(APIRoute):
    """A console endpoint wrapped in the request cycle the module docstring describes."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        if self.name not in ROLES:
            msg = f"console route {self.name!r} has no entry in access.ROLES"
            raise AssertionError(msg)
        inner = super().get_route_handler()
        name = self.name

        async def handler(request: Request) -> Response:
            console = console_of(request)
            found = console.sessions.decode(request.cookies.get(COOKIE))
            request.state.session = found or console.sessions.new()
            request.state.session_changed = found is None
            request.state.viewer = None
            try:
                response = await _serve(request, inner, name)
            except Refused as refused:
                response = refused.response
            except RegistryError as exc:
                response = error_page(request, exc)
            if request.state.session_changed:
                console.sessions.set_cookie(response, request, session_of(request))
            response.headers.update(HEADERS)
            return response

        return handler


async def _serve(
    request: Request, inner: Callable[[Request], Awaitable[Response]], name: str
) -> Response:
    console = console_of(request)
    session = session_of(request)
    if request.method == "POST":
        form = await form_of(request)
        if not console.sessions.csrf_valid(session, field(form, "csrf")):
            raise Refused(
                message_page(
                    request,
                    403,
                    "Form expired",
                    "This form was not sent from this session's page. "
                    "Open the page again and resend it.",
                )
            )
    viewer = await _find_viewer(request, session)
    if viewer is None and session.signed_in:
        set_session(request, console.sessions.new())
    request.state.viewer = viewer
    _check(request, viewer, name)
    return await inner(request)
