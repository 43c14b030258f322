"""The domain layer stays pure: it imports no I/O, persistence, service or async module."""

import ast
from pathlib import Path

import pytest

DOMAIN = Path(__file__).resolve().parents[2] / "registry" / "domain"

ALLOWED = {
    "__future__",
    "bisect",
    "codecs",
    "collections",
    "collections.abc",
    "dataclasses",
    "difflib",
    "datetime",
    "enum",
    "functools",
    "heapq",
    "itertools",
    "math",
    "re",
    "string",
    "types",
    "typing",
    "unicodedata",
    # The archive reader (registry/domain/archive.py) parses archives held in memory:
    # zipfile and tarfile over io.BytesIO, never a path.
    "io",
    "stat",
    "struct",
    "tarfile",
    "zipfile",
    "zlib",
    # The discovery index (registry/domain/discovery.py): the SHA-256 its entries carry
    # and the JSON document itself, both computed over bytes in memory.
    "hashlib",
    "json",
    # The frontmatter's YAML (registry/domain/frontmatter.py): strictyaml and the parser it
    # vendors, over a str in memory.
    "strictyaml",
    "strictyaml.ruamel",
    "blake3",
    # The content check's one-pass literal search (registry/domain/literals.py): a regex
    # engine over bytes in memory, like `re`.
    "re2",
    # Attestations (registry/domain/attestation.py): Ed25519 and base64 over bytes in memory;
    # keys come from the caller.
    "base64",
    "binascii",
    "cryptography.exceptions",
    "cryptography.hazmat.primitives.asymmetric.ed25519",
    "cryptography.hazmat.primitives.serialization",
    # Look-alike slugs (registry/domain/skeleton.py): Unicode's confusables as data, read
    # from the package once.
    "confusable_homoglyphs",
    "blobstore.digest",
    "registry.errors",
}


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
    return modules


@pytest.mark.parametrize("path", sorted(DOMAIN.glob("*.py")), ids=lambda p: p.name)
def test_domain_module_imports_only_pure_modules(path):
    for module in imported_modules(path):
        assert module in ALLOWED or module.startswith("registry.domain"), module


def test_the_check_sees_the_modules():
    names = {p.name for p in DOMAIN.glob("*.py")}
    assert {"paths.py", "frontmatter.py", "manifest.py", "scanner.py", "package.py"} <= names
