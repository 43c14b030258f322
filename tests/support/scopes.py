"""The workspaces the suites write to, named once.

`ACME` is the tenant a test writes to when the name does not matter; `OTHER` and `GLOBEX`
are other tenants, for isolation checks (no read or write crosses a workspace); `CATALOG`
is the marketplace catalog's workspace (the default `catalog_workspace` setting).
"""

from __future__ import annotations

from typing import Final

from registry.domain.model import Scope

ACME: Final = Scope("acme")
OTHER: Final = Scope("other-co")
GLOBEX: Final = Scope("globex")
CATALOG: Final = Scope("catalog")
