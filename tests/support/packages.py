"""Small, valid packages for tests."""

from __future__ import annotations

from registry.domain.model import PackageFile


def skill_md(
    slug: str, description: str = "Does a useful thing for tests.", body: str = ""
) -> bytes:
    return (f"---\nname: {slug}\ndescription: {description}\n---\n\n# {slug}\n\n{body}\n").encode()


def package(
    slug: str, *, files: int = 3, size: int = 64, tag: str = "", executable: bool = True
) -> dict[str, bytes | PackageFile]:
    """A package of `files` supporting files of about `size` bytes; `tag` varies the content."""
    out: dict[str, bytes | PackageFile] = {"SKILL.md": skill_md(slug, body=tag)}
    for i in range(files):
        data = (f"{slug}:{tag}:{i}:".encode() * (size // 8 + 1))[:size]
        if i == 0 and executable:
            out["scripts/run.py"] = PackageFile(data, executable=True)
        else:
            out[f"references/part-{i:03d}.md"] = data
    return out


def as_bytes(files: dict[str, bytes | PackageFile]) -> dict[str, tuple[bytes, bool]]:
    """Normalise for comparisons: path -> (bytes, executable)."""
    result = {}
    for path, value in files.items():
        if isinstance(value, PackageFile):
            result[path] = (value.data, value.executable)
        else:
            result[path] = (value, False)
    return result
