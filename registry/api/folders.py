"""Folders on the caller's disk: a skill folder read as a package, a package written out.

What `skillreg publish DIR` and `skillreg get --out DIR` (and a catalog import) need from
the local filesystem, with the rules of docs/package-format.md ("How a folder is read"):
every file opened relative to its parent without following links, `.skillregignore`,
the package limits checked while reading.
"""

from __future__ import annotations

from registry.services.materialize.folder import read_folder, write_folder

__all__ = ["read_folder", "write_folder"]
