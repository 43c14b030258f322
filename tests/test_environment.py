"""Only the settings module reads the environment (docs/architecture.md).

The import rules themselves are import-linter contracts (pyproject.toml, `make lint`).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV_READERS = {"environ", "environb", "getenv", "getenvb"}


def _env_reads(source: str, name: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        named = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        if named and node.value.id == "os" and node.attr in ENV_READERS:
            found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [f"{name}:{node.lineno}" for a in node.names if a.name in ENV_READERS]
    return found


def test_only_the_settings_module_reads_the_environment():
    sources = [*ROOT.glob("registry/**/*.py"), *ROOT.glob("blobstore/**/*.py")]
    settings = ROOT / "registry" / "settings.py"
    assert settings in sources
    reads = [
        r
        for p in sources
        if p != settings
        for r in _env_reads(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))
    ]
    assert reads == []
    probe = "import os\nfrom os import getenv\nos.environ.get('X')\n"
    assert len(_env_reads(probe, "probe")) == 2
