"""Folders on the caller's disk: a skill folder read, a package written out, a file replaced.

What `skillreg publish DIR` and `skillreg get --out DIR` (and a catalog import) need from
the local filesystem, with the rules of docs/package-format.md ("How a folder is read"):
every file opened relative to its parent without following links, `.skillregignore`,
the package limits checked while reading; and a file replaced whole (a lock file).
"""

from __future__ import annotations

from registry.services.fsops import replace_file
from registry.services.materialize.folder import read_folder, write_folder

__all__ = ["read_folder", "replace_file", "write_folder"]
