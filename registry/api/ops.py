"""`reg.ops`: what operators and load balancers ask of a running service."""

from __future__ import annotations

from registry.services.context import Context
from registry.services.ops import health
from registry.services.ops.health import Readiness, ServiceStatus


class Operations:
    """The operator's view of one registry: `reg.ops`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    async def readiness(self) -> Readiness:
        """Whether the database and the blob store answer (never raises for their failures)."""
        return await health.readiness(self.ctx)

    async def service_status(self, workspace: str | None = None) -> ServiceStatus:
        """Service-wide figures for operators: aggregates only, no workspace names.

        With `workspace`, that workspace's learning section too (the caller's own).
        """
        return await health.service_status(self.ctx, workspace)
