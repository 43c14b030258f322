"""Write the app's OpenAPI document to a file: `python -m registry.http.openapi docs/openapi.json`.

`make openapi` runs it; a test fails when the served document and the checked-in copy
differ. Building the document touches neither the database nor the blob store.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from blobstore.memory import MemoryBlobStore
from registry.api import Registry
from registry.bootstrap import build_engine
from registry.http.app import create_app
from registry.settings import Settings


def render(document: dict[str, Any]) -> str:
    """The checked-in form of a document: stable key order, two-space indent."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


async def build() -> dict[str, Any]:
    """The OpenAPI document, from an app over a registry that is never used."""
    engine = build_engine(Settings(database_url="sqlite+aiosqlite://"))
    try:
        return create_app(Registry(engine, MemoryBlobStore())).openapi()
    finally:
        await engine.dispose()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m registry.http.openapi OUTPUT.json\n")
        return 2
    Path(argv[0]).write_text(render(asyncio.run(build())), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
