"""A whole small package in one `multipart/form-data` request, parsed while it streams.

One part per file, named by the file's path in the package (`curl -F 'scripts/run.py=@run.py'`);
the part named `meta`, if any, is a JSON `PackageMeta` (executable paths, message, actor,
sources, origin). Limits apply as the bytes arrive: at most `max_files` files, at most
`max_file_bytes` a file (`LimitExceeded`, 413), a small `meta`, and the body limit of the
route around it all (`registry/http/limits.py`). Nothing is stored until the whole
package was received and validated by the write path.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Final

from pydantic import ValidationError
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

from registry.domain.model import PackageFile
from registry.errors import LimitExceeded, ManifestInvalid
from registry.http.problems import HttpProblem
from registry.http.schemas import PackageMeta
from registry.settings import Settings

META_PART: Final = "meta"
_META_LIMIT: Final = 256 * 1024


@dataclass
class _Part:
    name: str | None = None
    data: bytearray = field(default_factory=bytearray)
    header_field: bytearray = field(default_factory=bytearray)
    header_value: bytearray = field(default_factory=bytearray)


@dataclass
class Upload:
    """A parsed package upload."""

    files: dict[str, PackageFile]
    meta: PackageMeta


class _Collector:
    """The parser's callbacks: collect parts, enforcing the limits as data arrives."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.parts: dict[str, bytes] = {}
        self.current = _Part()
        self.ended = False

    def begin(self) -> None:
        self.current = _Part()

    def header_field(self, data: bytes, start: int, end: int) -> None:
        self.current.header_field += data[start:end]

    def header_value(self, data: bytes, start: int, end: int) -> None:
        self.current.header_value += data[start:end]

    def header_end(self) -> None:
        part = self.current
        if part.header_field.strip().lower() == b"content-disposition":
            _, options = parse_options_header(bytes(part.header_value))
            raw = options.get(b"name")
            if raw is not None:
                try:
                    part.name = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise HttpProblem("bad_request", "a part name is not UTF-8") from None
        part.header_field.clear()
        part.header_value.clear()

    def headers_finished(self) -> None:
        name = self.current.name
        if name is None:
            raise HttpProblem("bad_request", "a part has no Content-Disposition name")
        if name in self.parts:
            raise ManifestInvalid("duplicate_path", "two parts have the same name", name)
        files = len(self.parts) - (META_PART in self.parts) + (name != META_PART)
        if files > self.settings.max_files:
            raise LimitExceeded("max_files", self.settings.max_files, files)

    def data(self, data: bytes, start: int, end: int) -> None:
        part = self.current
        part.data += data[start:end]
        limit = _META_LIMIT if part.name == META_PART else self.settings.max_file_bytes
        if len(part.data) > limit:
            rule = "max_meta_bytes" if part.name == META_PART else "max_file_bytes"
            raise LimitExceeded(rule, limit, len(part.data), path=part.name)

    def end_part(self) -> None:
        if self.current.name is not None:
            self.parts[self.current.name] = bytes(self.current.data)

    def end(self) -> None:
        self.ended = True


def boundary_of(content_type: str) -> bytes:
    """The boundary of a `multipart/form-data` Content-Type (400 if it has none)."""
    _, options = parse_options_header(content_type)
    boundary = options.get(b"boundary")
    if not boundary:
        raise HttpProblem("bad_request", "multipart/form-data without a boundary")
    return boundary


async def read_upload(
    chunks: AsyncIterator[bytes], content_type: str, settings: Settings
) -> Upload:
    """Parse a package upload from the body's chunks (see the module docstring)."""
    collector = _Collector(settings)
    try:
        parser = MultipartParser(
            boundary_of(content_type),
            callbacks={
                "on_part_begin": collector.begin,
                "on_header_field": collector.header_field,
                "on_header_value": collector.header_value,
                "on_header_end": collector.header_end,
                "on_headers_finished": collector.headers_finished,
                "on_part_data": collector.data,
                "on_part_end": collector.end_part,
                "on_end": collector.end,
            },
        )
        async for chunk in chunks:
            parser.write(chunk)
        parser.finalize()
    except FormParserError as exc:
        # The base class: `write` raises `MultipartParseError`, the constructor refuses a
        # boundary longer than the parser takes with a bare `FormParserError`.
        raise HttpProblem("bad_request", f"malformed multipart body: {exc}") from None
    if not collector.ended:
        raise HttpProblem("bad_request", "the multipart body ended before its final boundary")
    meta_raw = collector.parts.pop(META_PART, None)
    try:
        meta = PackageMeta() if meta_raw is None else PackageMeta.model_validate_json(meta_raw)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            raise HttpProblem("bad_request", "the meta part is not valid JSON") from None
        raise HttpProblem(
            "request_invalid",
            "the meta part does not match the PackageMeta schema",
            extra={
                "errors": [
                    {"loc": ["meta", *map(str, e["loc"])], "msg": e["msg"]} for e in exc.errors()
                ]
            },
        ) from None
    for path in meta.executable:
        if path not in collector.parts:
            raise ManifestInvalid("executable", "names a path that is not uploaded", path)
    executable = set(meta.executable)
    files = {p: PackageFile(d, p in executable) for p, d in collector.parts.items()}
    return Upload(files, meta)
