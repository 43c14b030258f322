"""A skill loader in a process of its own, for the concurrent-reader test.

    python -m tests.support.loader TARGET SLUG HASH [HASH ...]

Loads `TARGET/SLUG` (see `tests.support.targets.load_skill`) in a loop until killed and
checks every load: each must be one of the given manifest hashes. It prints a line when
what it sees changes (`<hash> <loads so far>`) and a line `unexpected <what>` for any load
that is not allowed (`absent`, or a manifest hash not given). A load whose tree was
retired while it read is retried, as a loader would, and not counted.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.targets import Retired, load_skill, manifest_of


def main(argv: list[str]) -> int:
    target, slug, allowed = Path(argv[1]), argv[2], set(argv[3:])
    last, loads = "", 0
    try:
        while True:
            try:
                files = load_skill(target, slug)
            except Retired:
                continue
            loads += 1
            seen = "absent" if files is None else manifest_of(files).hash
            if seen not in allowed:
                sys.stdout.write(f"unexpected {seen}\n")
            elif seen != last:
                sys.stdout.write(f"{seen} {loads}\n")
            else:
                continue
            last = seen
            sys.stdout.flush()
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
