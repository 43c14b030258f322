"""Folders nested deeper than a path or recursion reaches, made and removed by descriptors.

`nest` makes the chain one level at a time relative to the previous level's descriptor, so
the whole path may be longer than the kernel takes in one call (`PATH_MAX`). `unnest`
removes it deepest first without recursion: pytest's own clean-up of old temporary folders
(`shutil.rmtree`) recurses once a level and fails on a chain 1,500 levels deep, so a test
that makes one removes it itself (the `nested` fixture, tests/plugins/nesting.py).
"""

from __future__ import annotations

import os
from pathlib import Path


def nest(root: Path, name: str, levels: int) -> None:
    """`levels` folders `name` inside each other under `root`, a file `f.txt` in the last one."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        file = os.open("f.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(file, b"deep\n")
        os.close(file)
    finally:
        os.close(fd)


def unnest(root: Path, name: str) -> None:
    """Remove what `nest(root, name, ...)` made, deepest first, without recursion."""
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        while True:
            try:
                fds.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
            except FileNotFoundError:
                break
        os.unlink("f.txt", dir_fd=fds[-1])
        while len(fds) > 1:
            os.close(fds.pop())
            os.rmdir(name, dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)
