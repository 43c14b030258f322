"""Who may see and do what in the console: the same rules as the HTTP API.

`ROLES` names the role every console route needs, keyed by the route's name, like the API's
table (`registry/http/auth.py`): reads need `read`, publishing and marketplace jobs
`write`, the owner's restore, controls, deletes, decisions and approvals `owner`, the
operator page `admin`. A route missing from the table fails closed. The checks, in the
API's order: not signed in (or the token was revoked since): back to the sign-in page; a
path naming another workspace than the token's: 404, whether or not anything is there; a
role below the route's: 403. A read token's pages show no action, and the server refuses
the action anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from registry.api.types import TokenInfo
from registry.domain.access import Role

ROLES: Final[dict[str, Role | None]] = {
    # no token: the entrance and the way out (the forms still carry a CSRF token)
    "console_home": None,
    "console_signin_form": None,
    "console_signin": None,
    "console_signout": None,
    # reads
    "console_overview": Role.READ,
    "console_search": Role.READ,
    "console_skill": Role.READ,
    "console_file": Role.READ,
    "console_history": Role.READ,
    "console_archived": Role.READ,
    "console_diff": Role.READ,
    "console_edit_form": Role.WRITE,
    "console_delete_form": Role.OWNER,
    "console_decisions": Role.READ,
    "console_proposal": Role.READ,
    "console_marketplace": Role.READ,
    "console_job": Role.READ,
    # writes: the owner's edit is a package write, like the API's PUT
    "console_edit": Role.WRITE,
    "console_install": Role.WRITE,
    "console_update": Role.WRITE,
    # the owner's actions
    "console_restore": Role.OWNER,
    "console_yank": Role.OWNER,
    "console_unyank": Role.OWNER,
    "console_revive": Role.OWNER,
    "console_control": Role.OWNER,
    "console_delete": Role.OWNER,
    "console_approve": Role.OWNER,
    "console_decide": Role.OWNER,
    "console_decide_many": Role.OWNER,
    # operators
    "console_operator": Role.ADMIN,
}


@dataclass(frozen=True)
class Viewer:
    """The signed-in token a page is shown to."""

    token: TokenInfo

    @property
    def workspace(self) -> str:
        return self.token.workspace

    @property
    def role(self) -> Role:
        return self.token.role

    @property
    def actor(self) -> str:
        """Recorded as the actor of every change made through the console (as in the API)."""
        return f"token:{self.token.id}"

    def may(self, role: Role | str) -> bool:
        return self.token.role.allows(Role(role))
