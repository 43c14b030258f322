"""The one table from registry exceptions to exit codes (DESIGN.md, "The public face")."""

from __future__ import annotations

from typing import Final

from blobstore import BlobStoreError
from registry import errors

OK: Final = 0
UNEXPECTED: Final = 1
USAGE: Final = 2
REFUSED: Final = 3
CONFLICT: Final = 4
NOT_FOUND: Final = 5
# Configuration or connection: a bad database URL; a database that cannot be reached,
# refuses the password or is not initialised; a blob store that fails; an address `serve`
# cannot listen on. Not 1, which says the registry itself went wrong.
UNAVAILABLE: Final = 6
INTERRUPTED: Final = 130  # Ctrl-C before anything was changed (128 + SIGINT)

# Checked in order: the first class the exception is an instance of decides.
EXIT_CODES: Final[tuple[tuple[type[BaseException], int], ...]] = (
    (errors.RefusedInput, REFUSED),
    (errors.Conflict, CONFLICT),
    (errors.NotFound, NOT_FOUND),
    (errors.WorkspaceBusy, UNEXPECTED),  # contention, not configuration: retry
    (errors.StorageUnavailable, UNAVAILABLE),
    (errors.RegistryError, UNEXPECTED),
    (BlobStoreError, UNEXPECTED),
)


def exit_code(exc: BaseException) -> int:
    """The exit code for an exception that ends a command."""
    for cls, code in EXIT_CODES:
        if isinstance(exc, cls):
            return code
    return UNEXPECTED
