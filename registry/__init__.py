"""skill-registry: a transactional registry for agent skill packages."""

from __future__ import annotations

__version__ = "0.1.0"
