"""Failed authentications, counted per client address: someone guessing tokens is held off.

A token's secret is 32 random bytes: guessing one is hopeless, but every attempt costs a
database read, a log line and, on the console's sign-in form, a page. The rule: an address
whose presented tokens failed `limit` times within `window` seconds (over the API or the
console's sign-in, malformed tokens included) is refused for the rest of that window,
without its token being looked at: 429 `too_many_failures` with `Retry-After`, the
seconds until its oldest failure leaves the window. A request without any token is not a
failure (a reader of a public discovery index sends none).

The count lives in this process's memory, so a restart forgets it and N processes behind
a balancer give an address N x `limit` attempts per window. The address is the one uvicorn
reports: behind a proxy, the client's own only when the proxy is trusted
(`SKILLREG_FORWARDED_ALLOW_IPS`), else the proxy's, which holds everyone behind it off
together. At most `MAX_ADDRESSES` addresses are remembered; past that, the one whose last
failure is oldest is forgotten first, so a flood from many addresses costs bounded memory.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Final

from starlette.requests import Request

MAX_ADDRESSES: Final = 10_000


class AuthFailures:
    """The recent failed authentications of each client address."""

    def __init__(
        self, *, limit: int, window: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self.failures: OrderedDict[str, deque[float]] = OrderedDict()

    def retry_after(self, address: str) -> float | None:
        """Seconds `address` must wait before it may authenticate again, or None."""
        recent = self.failures.get(address)
        if recent is None:
            return None
        cutoff = self.clock() - self.window
        while recent and recent[0] <= cutoff:
            recent.popleft()
        if not recent:
            del self.failures[address]
            return None
        if len(recent) < self.limit:
            return None
        return recent[0] - cutoff

    def failed(self, address: str) -> None:
        """Count a failed authentication from `address`."""
        recent = self.failures.setdefault(address, deque(maxlen=self.limit))
        recent.append(self.clock())
        self.failures.move_to_end(address)
        while len(self.failures) > MAX_ADDRESSES:
            self.failures.popitem(last=False)


def failures_of(request: Request) -> AuthFailures:
    """The app's count of failed authentications (`create_app` makes it)."""
    failures: AuthFailures = request.app.state.auth_failures
    return failures


def client_address(request: Request) -> str:
    """The address a request's failures are counted under."""
    return request.client.host if request.client is not None else ""


def seconds(wait: float) -> int:
    """`wait` as a `Retry-After` (whole seconds, at least 1)."""
    return max(1, math.ceil(wait))
