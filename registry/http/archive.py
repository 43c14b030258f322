"""A package as a `.tar.gz`, encoded chunk by chunk while it is sent.

The archive is reproducible: entries in the manifest's order under `<slug>/`, owner 0,
mode 0755 or 0644 from the executable bit, every timestamp the version's creation time,
PAX headers (long UTF-8 paths), and a gzip header without a name or a time. The same
version always downloads as the same bytes.
"""

from __future__ import annotations

import tarfile
import zlib
from collections.abc import Iterator, Mapping
from typing import Final

from registry.domain.model import PackageFile

_BLOCK: Final = tarfile.BLOCKSIZE
_GZIP: Final = 31  # zlib's window bits for a gzip container
_CHUNK: Final = 64 * 1024


def tar_gz(prefix: str, files: Mapping[str, PackageFile], mtime: int) -> Iterator[bytes]:
    """Yield the compressed archive of `files` under `prefix/`, a piece at a time."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, _GZIP)
    for path in sorted(files, key=lambda p: p.encode("utf-8")):
        file = files[path]
        info = tarfile.TarInfo(f"{prefix}/{path}")
        info.size = len(file.data)
        info.mode = 0o755 if file.executable else 0o644
        info.mtime = mtime
        info.type = tarfile.REGTYPE
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        pieces = [info.tobuf(tarfile.PAX_FORMAT, "utf-8", "strict")]
        pieces += [file.data[i : i + _CHUNK] for i in range(0, len(file.data), _CHUNK)]
        pieces.append(b"\0" * (-len(file.data) % _BLOCK))
        for piece in pieces:
            out = compressor.compress(piece)
            if out:
                yield out
    yield compressor.compress(b"\0" * (2 * _BLOCK)) + compressor.flush()
