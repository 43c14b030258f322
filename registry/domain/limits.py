"""Package limits (DESIGN.md, "Path rules"), as a pure value the validators take."""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on a package. The defaults are the documented ones; all are configurable."""

    max_files: int = 100
    max_file_bytes: int = 2 * MiB
    max_package_bytes: int = 20 * MiB
    max_depth: int = 8
    max_segment_bytes: int = 255
