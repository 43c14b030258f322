"""When a learning write would bring back a behaviour the owner undid (docs/history.md).

A **suppression** records the change an owner undid: for a restore, every file the undone
head added, changed or removed relative to the restored version; for a delete, every file
of the deleted head. Each file keeps the digest it had in the undone package (None if the
change removed it) and, for text, two **sketches**: of the undone text and of the text the
owner kept (the restored version's; none for a delete or a file the change added).

A package **reapplies** a suppressed change when, for every file of the change:

- a removed path is absent from the package again; otherwise
- the package holds the path with the same bytes (digest), or, for text, with a text whose
  similarity to the undone text is at least `THRESHOLD` **and** greater than its
  similarity to the kept text (so a package that merely keeps the restored text, which may
  itself be close to the undone one, does not count).

**Similarity** is the Jaccard similarity of the sets of word 3-shingles of the normalised
texts (NFKC, case-folded, words of letters, digits and `_`: punctuation, whitespace, line endings
and case do not count). It is estimated from bottom-k sketches (the `SKETCH_SIZE` smallest
64-bit hashes of the shingles, BLAKE3): exact while a text has at most `SKETCH_SIZE`
shingles, and otherwise an estimate whose standard error is at most
`1 / (2 * sqrt(SKETCH_SIZE))` (0.044). Texts over `MAX_SKETCH_BYTES`, and files that are
not UTF-8 text, are compared by digest only.

Sketches are stored with the suppression and computed for a learning write before the
workspace lock is taken, so the comparison under the lock costs a few set operations per
file, whatever the files' sizes. Pure: no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from blake3 import blake3

THRESHOLD: Final = 0.9
SKETCH_SIZE: Final = 128
SHINGLE_WORDS: Final = 3
MAX_SKETCH_BYTES: Final = 256 * 1024
_MASK: Final = (1 << 63) - 1  # sketches are stored as JSON numbers: keep them below 2**63

Sketch = tuple[int, ...]


_WORD: Final = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def sketch_text(text: str) -> Sketch:
    """The bottom-`SKETCH_SIZE` sketch of a text's word 3-shingles (sorted hashes)."""
    words = _words(text)
    n = SHINGLE_WORDS
    shingles = (
        {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}
        if len(words) >= n
        else {" ".join(words)}
    )
    hashes = {int.from_bytes(blake3(s.encode("utf-8")).digest(8), "big") & _MASK for s in shingles}
    return tuple(sorted(hashes)[:SKETCH_SIZE])


def sketch(data: bytes) -> Sketch | None:
    """The sketch of a file's text, or None for binary, non-UTF-8 or over-large files."""
    if len(data) > MAX_SKETCH_BYTES or b"\x00" in data[:8000]:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return sketch_text(text)


def similarity(a: Sketch, b: Sketch) -> float:
    """The (estimated) Jaccard similarity of the shingle sets two sketches were made from."""
    if not a and not b:
        return 1.0
    sa, sb = set(a), set(b)
    union = sorted(sa | sb)[:SKETCH_SIZE]
    both = sum(1 for h in union if h in sa and h in sb)
    return both / len(union)


@dataclass(frozen=True, slots=True)
class ChangedFile:
    """One file of an undone change (see the module docstring)."""

    path: str
    digest: str | None
    undone: Sketch | None = None
    kept: Sketch | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "digest": self.digest,
            "undone": None if self.undone is None else list(self.undone),
            "kept": None if self.kept is None else list(self.kept),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChangedFile:
        undone, kept = data.get("undone"), data.get("kept")
        return cls(
            path=str(data["path"]),
            digest=None if data.get("digest") is None else str(data["digest"]),
            undone=None if undone is None else tuple(int(h) for h in undone),
            kept=None if kept is None else tuple(int(h) for h in kept),
        )


@dataclass(frozen=True, slots=True)
class CandidateFile:
    """A file of a learning write's package: its digest and, for text, its sketch."""

    digest: str
    sketch: Sketch | None


def reapplies(change: Sequence[ChangedFile], candidate: Mapping[str, CandidateFile]) -> bool:
    """True if the package `candidate` (path -> file) brings the undone `change` back."""
    return bool(change) and all(_brings_back(f, candidate.get(f.path)) for f in change)


def _brings_back(undone: ChangedFile, got: CandidateFile | None) -> bool:
    if undone.digest is None:
        return got is None
    if got is None:
        return False
    if got.digest == undone.digest:
        return True
    if undone.undone is None or got.sketch is None:
        return False
    closeness = similarity(got.sketch, undone.undone)
    if closeness < THRESHOLD:
        return False
    return undone.kept is None or similarity(got.sketch, undone.kept) < closeness
